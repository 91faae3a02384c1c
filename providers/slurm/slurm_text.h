// What the Slurm provider reads from and writes for Slurm's command line tools: pure functions, no I/O.
// Lines of machine-readable output are tagged with a first field (e.g. "P|..."), so anything else a login
// shell or ssh prints in between is ignored.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tsum::providers::slurm {

// One partition as sinfo reports it (heterogeneous nodes: the smallest node's figures).
struct PartitionInfo {
  std::string name;
  int cpus = 0;            // per node
  double memory_gib = 0;   // per node
  int gpus = 0;            // per node, from the gres "gpu[:type]:count"
  std::string gpu_type;
  int nodes = 0;
  bool up = true;          // the partition's availability
};

// One job as `scontrol show job -o` or squeue reports it.
struct JobInfo {
  std::string id;
  std::string name;
  std::string comment;
  std::string state;       // PENDING, RUNNING, COMPLETING, COMPLETED, FAILED, CANCELLED, NODE_FAIL, TIMEOUT, ...
  std::string reason;      // why it pends or ended ("None" when none)
  std::string node_list;   // hostlist expression, e.g. "c[1-2]"
  std::string batch_host;
  std::string submit_time; // the controller's local time, YYYY-MM-DDTHH:MM:SS; "Unknown" or empty when none
  std::string start_time;
  int exit_status = 0;     // of the batch script (ExitCode=status:signal)
  int exit_signal = 0;
};

// The sinfo format offers() asks for, and its parser: one PartitionInfo per partition, in sinfo's order.
inline constexpr std::string_view kSinfoFormat = "P|%R|%c|%m|%G|%D|%a";
std::vector<PartitionInfo> parse_sinfo(std::string_view text);

// The GPUs of a gres field ("gpu:a100:4(S:0-1),shard:8" → 4, "a100"); 0 for "(null)".
int gres_gpus(std::string_view gres, std::string* type = nullptr);

// The job of `scontrol show job -o ID` (one line of Key=Value fields); nullopt when the text has no JobId.
std::optional<JobInfo> parse_scontrol_job(std::string_view text);

// The squeue format list_tagged, describe_many and the idempotency lookup ask for, and its parser: id, name,
// comment, state, nodes, reason, batch host, submit and start time.
inline constexpr std::string_view kSqueueFormat = "J|%i|%j|%k|%T|%N|%r|%B|%V|%S";
std::vector<JobInfo> parse_squeue(std::string_view text);

// The first host of a hostlist expression: "c[3-5,7],d1" → "c3"; "" for "" or "(null)".
std::string first_host(std::string_view hostlist);

// end - start in seconds for two of the controller's time stamps; nullopt when either is not a time.
std::optional<double> seconds_between(std::string_view start, std::string_view end);

// Whether a job in `state` has reached its final state, and whether it is still waiting to start. COMPLETING is not
// final: the job's script has ended but its nodes are still held (and billed) until Slurm has cleaned them up.
bool ended(std::string_view state);
bool pending(std::string_view state);

// The batch script every job runs: one task per node (srun), each writing the agent (from the job's
// environment, TSUM_AGENT_B64) into a directory of its own node and running it with TSUM_NODE and TSUM_NODES.
std::string batch_script();

}  // namespace tsum::providers::slurm
