// The Slurm provider: machines are the nodes of a Slurm cluster's partitions, reached through its login node
// over ssh (providers/ssh's machinery; slurm_cli.h runs sinfo, sbatch, scontrol, squeue and scancel there).
//
// An "instance" is one batch job of LaunchSpec::nodes nodes (capabilities().gang_nodes: one create makes them
// all), named tsum-<tag>-<run id>, its --comment the idempotency token:
//   offers:    one per partition sinfo lists (instance type = partition; vCPUs, memory and GPUs per node, the
//              smallest node's), priced per node-hour from the config's partitions. A partition the config
//              does not price is listed at 0 with a note saying so, so it can be seen and chosen deliberately.
//   create:    looks for the job first (a record under <state_dir>/slurm/jobs, then squeue by name and
//              comment), else copies the agent, its environment (mode 0600: it holds the run token) and the
//              batch script to <work_dir>/<job name>-<token> on the login node with scp, runs
//              `sbatch --parsable --exclusive --no-requeue --nodes=N --ntasks-per-node=1` there, with the
//              environment and the agent (TSUM_AGENT_B64) in sbatch's own environment, and removes that
//              directory. No shared file system is assumed: the batch script (slurm_text.h) srun's one task per
//              node, each writing the agent into /tmp/tsum-<job>-<node> on its node, with TSUM_NODE (0..N-1)
//              and TSUM_NODES set. The handle's id is the job id; its data holds the job name, partition,
//              nodes and submitted_at (the daemon's unix time at sbatch).
//   describe:  `scontrol show job`: pending while queued (detail "queued: <Slurm's reason>"), running (address:
//              the batch host) and exited once it ended (completed, failed with the batch script's exit status,
//              cancelled, NODE_FAIL...; a node that is down or not responding is named in the detail); gone once
//              the controller forgot it. queue_wait_s = StartTime - SubmitTime on the controller's clock, once
//              the job has started.
//   describe_many: one squeue (or GET jobs) for every job in the queue, each pending or running one answered as
//              describe would; a job no longer there (ended, or forgotten) is asked about alone, as describe.
//              When the listing fails, every job gets its error.
//   terminate: scancel, then scontrol until the job has left the queue (cancel_timeout). Gone already is
//              success. From then on describe says gone (a marker under <state_dir>/slurm/left): the
//              controller remembers an ended job for MinJobAge, but its nodes are free.
//   list_tagged: squeue's jobs named tsum-<tag>-*.
#pragma once

#include <memory>
#include <string>

#include "providers/provider.h"
#include "providers/slurm/slurm_cli.h"
#include "providers/slurm/slurm_options.h"

namespace tsum::providers {

class SlurmProvider final : public Provider {
 public:
  explicit SlurmProvider(SlurmOptions opts);
  SlurmProvider(const SlurmProvider&) = delete;
  SlurmProvider& operator=(const SlurmProvider&) = delete;

  std::string_view name() const override { return "slurm"; }
  Capabilities capabilities() const override;
  Task<Result<std::vector<Offer>>> offers(const Requirements& req) override;
  Task<Result<InstanceHandle>> create(const Offer& offer, const LaunchSpec& spec) override;
  Task<Result<InstanceStatus>> describe(const InstanceHandle& h) override;
  Task<std::vector<Result<InstanceStatus>>> describe_many(const std::vector<InstanceHandle>& handles) override;
  Task<Status> terminate(const InstanceHandle& h) override;
  Task<Result<std::vector<InstanceHandle>>> list_tagged(std::string_view tag) override;

  const SlurmOptions& options() const { return opts_; }
  // The job name of a run: tsum-<tag>-<run id>.
  static std::string job_name(std::string_view tag, std::string_view run_id);

 private:
  std::string record_path(const std::string& token) const;
  std::string left_marker(const std::string& job_id) const;  // written once terminate saw the job leave the queue
  Task<std::string> ended_detail(const slurm::JobInfo& j);
  static InstanceStatus live_status(const slurm::JobInfo& j);  // of a job pending or running

  SlurmOptions opts_;
  std::unique_ptr<slurm::SlurmApi> cli_;  // the REST API where slurmrestd is configured, else the CLI
};

}  // namespace tsum::providers
