// The Slurm operations the provider needs, behind one interface with two doors: Slurm's command line tools
// on the login node over ssh (slurm_cli.h) and slurmrestd's REST API v0.0.38 (slurm_rest.h).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "providers/provider.h"
#include "providers/slurm/slurm_text.h"

namespace tsum::providers::slurm {

struct SubmitRequest {
  std::string name;        // --job-name
  std::string comment;     // --comment: the idempotency token
  std::string partition;
  int nodes = 1;
  std::string agent_script;
  std::map<std::string, std::string> env;  // the agent's environment (holds the run token)
  std::string work;        // the CLI's directory on the login node for the submission's files (removed after)
};

class SlurmApi {
 public:
  virtual ~SlurmApi() = default;
  virtual Task<Result<std::vector<PartitionInfo>>> partitions() = 0;
  // Submits batch_script() as one job of req.nodes nodes (exclusive, not requeued, one task per node) with
  // req.env and the agent (TSUM_AGENT_B64) in its environment. The job id.
  virtual Task<Result<std::string>> submit(const SubmitRequest& req) = 0;
  // nullopt when the controller no longer knows the job (it left the queue more than MinJobAge ago).
  virtual Task<Result<std::optional<JobInfo>>> job(const std::string& id) = 0;
  // The jobs in the queue (pending, running, completing), every user's.
  virtual Task<Result<std::vector<JobInfo>>> jobs() = 0;
  // A job that is unknown or ended already is no error.
  virtual Task<Status> cancel(const std::string& id) = 0;
  // "c1 down* (Not responding)" for each node of `node_list` that is down, drained or not responding.
  virtual Task<Result<std::vector<std::string>>> bad_nodes(const std::string& node_list) = 0;
  virtual std::string where() const = 0;  // for messages
};

}  // namespace tsum::providers::slurm
