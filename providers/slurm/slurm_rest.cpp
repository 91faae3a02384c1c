#include "providers/slurm/slurm_rest.h"

#include <ctime>
#include <map>

#include "providers/http/codec.h"

namespace tsum::providers::slurm {

using nlohmann::json;

namespace {

std::string text_of(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  return "";
}

// A unix time as the controller's stamps read (UTC here: only differences are taken); "" for none.
std::string stamp(const json& v) {
  if (!v.is_number_integer() || v.get<int64_t>() <= 0) return "";
  std::time_t t = v.get<int64_t>();
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return buf;
}

// Slurm's "errors": [{"error": ..., "description": ...}] as one line.
std::string errors_of(const json& j) {
  std::string out;
  if (j.is_object() && j.contains("errors") && j["errors"].is_array())
    for (const auto& e : j["errors"]) {
      std::string one = e.value("description", "") + (e.contains("error") ? " (" + text_of(e["error"]) + ")" : "");
      if (one.empty()) continue;
      out += (out.empty() ? "" : "; ") + one;
    }
  return out;
}

}  // namespace

JobInfo job_from_rest(const json& j) {
  JobInfo out;
  out.id = text_of(j.value("job_id", json()));
  out.name = j.value("name", "");
  const json comment = j.value("comment", json());
  out.comment = comment.is_object() ? comment.value("job", "") : text_of(comment);
  out.state = j.value("job_state", "");
  out.reason = j.value("state_reason", "");
  out.node_list = j.value("nodes", "");
  out.batch_host = j.value("batch_host", "");
  out.submit_time = stamp(j.value("submit_time", json()));
  out.start_time = stamp(j.value("start_time", json()));
  const json code = j.value("exit_code", json());
  if (code.is_number_integer()) {
    // v0.0.38 gives the wait status: exit status in the high byte, the signal in the low bits.
    int raw = code.get<int>();
    out.exit_status = raw >= 256 ? raw >> 8 : raw;
    out.exit_signal = raw >= 256 ? raw & 0x7f : 0;
  }
  return out;
}

std::vector<PartitionInfo> partitions_from_rest(const json& partitions, const json& nodes) {
  std::vector<PartitionInfo> out;
  for (const auto& p : partitions) {
    PartitionInfo info;
    info.name = p.value("name", "");
    info.nodes = p.value("total_nodes", 0);
    info.up = p.value("state", "UP") == "UP";
    bool first = true;
    for (const auto& n : nodes) {
      const auto parts = n.value("partitions", json::array());
      if (std::find(parts.begin(), parts.end(), json(info.name)) == parts.end()) continue;
      int cpus = n.value("cpus", 0);
      double mem = n.value("real_memory", 0) / 1024.0;
      std::string type;
      int gpus = gres_gpus(n.value("gres", ""), &type);
      if (first || cpus < info.cpus) info.cpus = cpus;
      if (first || mem < info.memory_gib) info.memory_gib = mem;
      if (first || gpus < info.gpus) info.gpus = gpus, info.gpu_type = type;
      first = false;
    }
    if (!info.name.empty()) out.push_back(std::move(info));
  }
  return out;
}

SlurmRest::SlurmRest(const SlurmOptions& opts)
    : opts_(opts), base_(opts.rest_url + (opts.rest_url.ends_with("/") ? "" : "/") + "slurm/v0.0.38/"),
      http_(std::make_unique<http::HttpClient>()) {}

std::string SlurmRest::where() const { return "slurmrestd " + opts_.rest_url; }

Task<Result<json>> SlurmRest::call(const std::string& method, const std::string& path, const std::string& body) {
  http::HttpRequest req;
  req.method = method;
  req.url = base_ + path;
  req.headers = {{"X-SLURM-USER-NAME", opts_.rest_user}, {"X-SLURM-USER-TOKEN", opts_.rest_token},
                 {"Accept", "application/json"}};
  if (!body.empty()) {
    req.headers.emplace_back("Content-Type", "application/json");
    req.body = body;
  }
  req.timeout = opts_.command_timeout;
  auto r = co_await http_->send_once(req);
  if (!r) co_return make_error(r.code(), method + " " + path + " at " + where() + ": " + r.error().detail);
  json j = json::parse(r->body, nullptr, false);
  if (r->status / 100 != 2 || j.is_discarded()) {
    std::string why = j.is_discarded() ? r->body.substr(0, 300) : errors_of(j);
    co_return make_error(r->status == 401 || r->status == 403 ? Code::invalid_argument : Code::unavailable,
                         method + " " + path + " at " + where() + ": HTTP " + std::to_string(r->status) + ": " + why);
  }
  co_return j;
}

Task<Result<std::vector<PartitionInfo>>> SlurmRest::partitions() {
  auto parts = co_await call("GET", "partitions");
  if (!parts) co_return parts.error();
  auto nodes = co_await call("GET", "nodes");
  if (!nodes) co_return nodes.error();
  co_return partitions_from_rest(parts->value("partitions", json::array()), nodes->value("nodes", json::array()));
}

Task<Result<std::string>> SlurmRest::submit(const SubmitRequest& req) {
  json env = json::object();
  for (const auto& [k, v] : req.env) env[k] = v;
  if (!env.contains("PATH")) env["PATH"] = "/usr/local/bin:/usr/bin:/bin";
  env["TSUM_AGENT_B64"] = http::base64_encode(req.agent_script);
  json job = {{"name", req.name}, {"comment", req.comment}, {"partition", req.partition},
              {"nodes", req.nodes}, {"tasks", req.nodes},
              {"tasks_per_node", 1}, {"exclusive", "exclusive"}, {"requeue", false},
              {"current_working_directory", "/tmp"}, {"standard_output", "/tmp/tsum-%j.out"},
              {"environment", env}};
  const json body = {{"job", job}, {"script", batch_script()}};
  auto r = co_await call("POST", "job/submit", body.dump());
  if (!r) co_return r.error();
  std::string id = text_of(r->value("job_id", json()));
  if (id.empty() || id == "0")
    co_return make_error(Code::unavailable, "job/submit at " + where() + " took no job: " + errors_of(*r));
  co_return id;
}

Task<Result<std::optional<JobInfo>>> SlurmRest::job(const std::string& id) {
  auto r = co_await call("GET", "job/" + id);
  if (!r) {
    if (r.error().detail.find("Invalid job id") != std::string::npos) co_return std::optional<JobInfo>();
    co_return r.error();
  }
  const json jobs = r->value("jobs", json::array());
  if (jobs.empty()) co_return std::optional<JobInfo>();
  co_return std::optional<JobInfo>(job_from_rest(jobs[0]));
}

Task<Result<std::vector<JobInfo>>> SlurmRest::jobs() {
  auto r = co_await call("GET", "jobs");
  if (!r) co_return r.error();
  std::vector<JobInfo> out;
  for (const auto& j : r->value("jobs", json::array())) {
    JobInfo info = job_from_rest(j);
    if (!ended(info.state)) out.push_back(std::move(info));
  }
  co_return out;
}

Task<Status> SlurmRest::cancel(const std::string& id) {
  auto r = co_await call("DELETE", "job/" + id);
  if (r) co_return Status{};
  const std::string& d = r.error().detail;
  if (d.find("Invalid job id") != std::string::npos || d.find("already completing or completed") != std::string::npos)
    co_return Status{};
  co_return r.error();
}

Task<Result<std::vector<std::string>>> SlurmRest::bad_nodes(const std::string& node_list) {
  std::vector<std::string> out;
  if (node_list.empty()) co_return out;
  auto r = co_await call("GET", "nodes");
  if (!r) co_return r.error();
  for (const auto& n : r->value("nodes", json::array())) {
    const std::string name = n.value("name", "");
    // Only the nodes the job had: its list names them (a hostlist expression; plain names are matched).
    if (name.empty() || (node_list != name && node_list.find(name) == std::string::npos &&
                         node_list.find('[') == std::string::npos))
      continue;
    std::string state = n.value("state", "");
    for (const auto& f : n.value("state_flags", json::array()))
      if (f.is_string()) state += "+" + f.get<std::string>();
    std::string lower;
    for (char c : state) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    bool bad = false;
    for (const char* s : {"down", "drain", "fail", "unknown", "not_responding"}) bad = bad || lower.find(s) != std::string::npos;
    if (!bad) continue;
    std::string reason = n.value("reason", "");
    out.push_back(name + " " + lower + (reason.empty() ? "" : " (" + reason + ")"));
  }
  co_return out;
}

}  // namespace tsum::providers::slurm
