// Slurm's command line tools on the cluster's login node, over ssh (providers/ssh: the system OpenSSH
// client, BatchMode, host key pinned in the daemon's own known_hosts, every command under a deadline):
// sinfo for partitions, sbatch to submit, scontrol show job for one job, squeue for the live ones, scancel.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "providers/provider.h"
#include "providers/slurm/slurm_api.h"
#include "providers/slurm/slurm_options.h"
#include "providers/slurm/slurm_text.h"
#include "providers/ssh/ssh_command.h"
#include "providers/ssh/ssh_options.h"

namespace tsum::providers::slurm {

class SlurmCli final : public SlurmApi {
 public:
  explicit SlurmCli(const SlurmOptions& opts);

  Task<Result<std::vector<PartitionInfo>>> partitions() override;
  // Copies the agent, its environment (mode 0600) and the batch script to req.work, runs sbatch there (the
  // job gets the environment, the agent inline as TSUM_AGENT_B64) and removes req.work. The job id.
  Task<Result<std::string>> submit(const SubmitRequest& req) override;
  // nullopt when the controller no longer knows the job (it left the queue more than MinJobAge ago).
  Task<Result<std::optional<JobInfo>>> job(const std::string& id) override;
  // The jobs in the queue (pending, running, completing), every user's.
  Task<Result<std::vector<JobInfo>>> jobs() override;
  // scancel; a job that is unknown or ended already is no error.
  Task<Status> cancel(const std::string& id) override;
  // "c1 down* (Not responding)" for each node of `node_list` that is down, drained or not responding.
  Task<Result<std::vector<std::string>>> bad_nodes(const std::string& node_list) override;

  std::string where() const override;  // "slurm login node ADDRESS:PORT"

 private:
  Task<Result<ssh::CommandResult>> run(const std::string& script);

  const SlurmOptions& opts_;
  SshOptions ssh_;  // the login node as the ssh helpers take it
  std::string logs_;
};

}  // namespace tsum::providers::slurm
