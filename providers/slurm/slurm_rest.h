// slurmrestd's REST API v0.0.38 (Slurm 22.05) instead of the command line tools: GET .../partitions and
// .../nodes for offers, POST .../job/submit, GET .../job/{id}, GET .../jobs, DELETE .../job/{id}, every
// request with X-SLURM-USER-NAME and X-SLURM-USER-TOKEN (a JWT: slurmctld needs AuthAltTypes=auth/jwt).
// The job's script and environment travel in the submit request's body; nothing is copied anywhere.
#pragma once

#include <memory>
#include <string>

#include "providers/http/http_client.h"
#include "providers/slurm/slurm_api.h"
#include "providers/slurm/slurm_options.h"

namespace tsum::providers::slurm {

class SlurmRest final : public SlurmApi {
 public:
  explicit SlurmRest(const SlurmOptions& opts);

  Task<Result<std::vector<PartitionInfo>>> partitions() override;
  Task<Result<std::string>> submit(const SubmitRequest& req) override;
  Task<Result<std::optional<JobInfo>>> job(const std::string& id) override;
  Task<Result<std::vector<JobInfo>>> jobs() override;
  Task<Status> cancel(const std::string& id) override;
  Task<Result<std::vector<std::string>>> bad_nodes(const std::string& node_list) override;
  std::string where() const override;  // "slurmrestd URL"

 private:
  // The response's JSON for a 2xx; an error naming the call and Slurm's "errors" otherwise.
  Task<Result<nlohmann::json>> call(const std::string& method, const std::string& path, const std::string& body = {});

  const SlurmOptions& opts_;
  std::string base_;  // <rest_url>/slurm/v0.0.38/
  std::unique_ptr<http::HttpClient> http_;
};

// The pieces of slurmrestd's answers, parsed (pure; tested without a server).
JobInfo job_from_rest(const nlohmann::json& j);
std::vector<PartitionInfo> partitions_from_rest(const nlohmann::json& partitions, const nlohmann::json& nodes);

}  // namespace tsum::providers::slurm
