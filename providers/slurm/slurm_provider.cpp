#include "providers/slurm/slurm_provider.h"

#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>

#include "providers/slurm/slurm_rest.h"
#include "providers/sleep_for.h"

namespace tsum::providers {

namespace fs = std::filesystem;
namespace asio = boost::asio;
using slurm::JobInfo;

namespace {

// A token as a file name: [A-Za-z0-9_.-] kept, anything else '_', at most 120 characters.
std::string slug(const std::string& s) {
  std::string out;
  for (char c : s.substr(0, 120)) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ? c : '_';
  return out;
}

double unix_now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

SlurmProvider::SlurmProvider(SlurmOptions opts) : opts_(std::move(opts)) {
  if (opts_.rest_url.empty()) cli_ = std::make_unique<slurm::SlurmCli>(opts_);
  else cli_ = std::make_unique<slurm::SlurmRest>(opts_);
}

std::string SlurmProvider::job_name(std::string_view tag, std::string_view run_id) {
  return "tsum-" + std::string(tag) + "-" + std::string(run_id);
}

Capabilities SlurmProvider::capabilities() const {
  // gpus: a partition may have them (sinfo's gres says which); agents on compute nodes reach the daemon by
  // its public URL.
  return {.gpus = true, .spot = false, .docker = opts_.docker, .native = true, .reaches_daemon = false,
          .gang_nodes = true};
}

std::string SlurmProvider::record_path(const std::string& token) const {
  return opts_.state_dir + "/slurm/jobs/" + slug(token) + ".json";
}

Task<Result<std::vector<Offer>>> SlurmProvider::offers(const Requirements& req) {
  auto parts = co_await cli_->partitions();
  if (!parts) co_return parts.error();
  std::vector<Offer> out;
  const std::string cluster = opts_.login.name.empty() ? opts_.login.address : opts_.login.name;
  for (const auto& p : *parts) {
    Offer o;
    o.provider = "slurm";
    o.instance_type = p.name;
    o.vcpus = p.cpus;
    o.memory_gib = p.memory_gib;
    o.gpus = p.gpus;
    o.gpu_type = p.gpu_type;
    o.region = cluster;
    std::string nodes = std::to_string(p.nodes) + (p.nodes == 1 ? " node" : " nodes") + (p.up ? "" : ", partition down");
    if (auto it = opts_.partitions.find(p.name); it != opts_.partitions.end()) {
      o.hourly_price = it->second.hourly_price;
      o.currency = it->second.currency;
      o.billing_rule = it->second.billing_rule;
      o.note = "Slurm partition " + p.name + " (" + nodes + "), price per node, billed by " + o.billing_rule;
    } else {
      o.note = "Slurm partition " + p.name + " (" + nodes + "): unpriced, no providers.slurm.partitions." + p.name +
               " in the config; listed at 0";
    }
    if (satisfies(o, req)) out.push_back(std::move(o));
  }
  co_return out;
}

Task<Result<InstanceHandle>> SlurmProvider::create(const Offer& offer, const LaunchSpec& spec) {
  if (spec.idempotency_token.empty()) co_return make_error(Code::invalid_argument, "create needs an idempotency token");
  if (offer.instance_type.empty()) co_return make_error(Code::invalid_argument, "slurm: the offer names no partition");
  if (spec.nodes < 1) co_return make_error(Code::invalid_argument, "slurm: nodes must be at least 1");
  const std::string name = job_name(spec.tag, spec.run_id);
  const std::string record = record_path(spec.idempotency_token);
  if (std::ifstream in(record); in) {
    auto j = nlohmann::json::parse(in, nullptr, false);
    if (!j.is_discarded()) co_return InstanceHandle::from_json(j);
  }
  InstanceHandle h{"slurm", "",
                   {{"name", name}, {"partition", offer.instance_type}, {"nodes", spec.nodes},
                    {"submitted_at", unix_now_s()}}};
  auto queued = co_await cli_->jobs();  // submitted before a crash, before the record was written?
  if (!queued) co_return queued.error();
  for (const auto& j : *queued)
    if (j.name == name && j.comment == spec.idempotency_token) h.id = j.id;
  if (h.id.empty()) {
    slurm::SubmitRequest req{.name = name, .comment = spec.idempotency_token, .partition = offer.instance_type,
                             .nodes = spec.nodes, .agent_script = spec.agent_script, .env = spec.env,
                             .work = opts_.work_dir + "/" + name + "-" + slug(spec.idempotency_token).substr(0, 16)};
    auto id = co_await cli_->submit(req);
    if (!id) co_return id.error();
    h.id = *id;
  }
  std::error_code ec;
  fs::create_directories(fs::path(record).parent_path(), ec);
  std::ofstream(record + ".tmp") << h.to_json().dump();
  fs::rename(record + ".tmp", record, ec);
  co_return h;
}

namespace {
// The job is the handle's, not another that got its id after the controller forgot it (a job's name is the run's).
bool is_handles_job(const InstanceHandle& h, const JobInfo& j) {
  const std::string name = h.data.value("name", "");
  return name.empty() || j.name == name;
}
}  // namespace

Task<std::string> SlurmProvider::ended_detail(const JobInfo& j) {
  std::string d = "slurm job " + j.id + " " + j.state;
  if (!j.node_list.empty()) d += " on " + j.node_list;
  // A batch script that was cut off (node failure, cancel) reported no status of its own: 0 would mislead.
  if ((j.state != "CANCELLED" && j.state != "NODE_FAIL") || j.exit_status != 0)
    d += ", exit status " + std::to_string(j.exit_status);
  if (j.exit_signal != 0) d += ", signal " + std::to_string(j.exit_signal);
  if (!j.reason.empty() && j.reason != "None") d += ", reason " + j.reason;
  if (j.state != "COMPLETED" && j.state != "CANCELLED") {
    auto bad = co_await cli_->bad_nodes(j.node_list);
    if (bad && !bad->empty()) {
      d += "; node";
      for (size_t i = 0; i < bad->size(); ++i) d += (i ? ", " : " ") + (*bad)[i];
    }
  }
  co_return d;
}

std::string SlurmProvider::left_marker(const std::string& id) const { return opts_.state_dir + "/slurm/left/" + slug(id); }

Task<Result<InstanceStatus>> SlurmProvider::describe(const InstanceHandle& h) {
  std::error_code ec;
  if (fs::exists(left_marker(h.id), ec))  // terminate saw it leave the queue: its nodes are released
    co_return InstanceStatus{InstanceState::gone, "slurm job " + h.id + " ended and left the queue", ""};
  auto found = co_await cli_->job(h.id);
  if (!found) co_return found.error();
  if (!*found || !is_handles_job(h, **found))
    co_return InstanceStatus{InstanceState::gone, "slurm job " + h.id + " is no longer known to the controller", ""};
  const JobInfo& j = **found;
  if (!slurm::ended(j.state)) co_return live_status(j);
  InstanceStatus st = live_status(j);
  st.state = InstanceState::exited;
  st.detail = co_await ended_detail(j);
  co_return st;
}

InstanceStatus SlurmProvider::live_status(const JobInfo& j) {
  if (slurm::pending(j.state)) {
    std::string why = j.reason.empty() || j.reason == "None" ? j.state : j.reason;
    return InstanceStatus{InstanceState::pending, "queued: " + why, ""};
  }
  InstanceStatus st;
  st.state = InstanceState::running;
  st.detail = "slurm job " + j.id + " " + j.state + " on " + j.node_list;
  st.address = j.batch_host.empty() ? slurm::first_host(j.node_list) : j.batch_host;
  if (!j.node_list.empty()) st.queue_wait_s = slurm::seconds_between(j.submit_time, j.start_time);
  return st;
}

Task<std::vector<Result<InstanceStatus>>> SlurmProvider::describe_many(const std::vector<InstanceHandle>& handles) {
  std::vector<Result<InstanceStatus>> out;
  out.reserve(handles.size());
  auto queued = co_await cli_->jobs();
  if (!queued) {  // the login node or slurmrestd does not answer: neither would each job's scontrol
    for (size_t i = 0; i < handles.size(); ++i) out.push_back(queued.error());
    co_return out;
  }
  std::map<std::string, const JobInfo*> by_id;
  for (const auto& j : *queued) by_id[j.id] = &j;
  for (const auto& h : handles) {
    const auto it = by_id.find(h.id);
    std::error_code ec;
    if (it != by_id.end() && is_handles_job(h, *it->second) && !slurm::ended(it->second->state) &&
        !fs::exists(left_marker(h.id), ec))
      out.push_back(live_status(*it->second));
    else
      out.push_back(co_await describe(h));
  }
  co_return out;
}

Task<Status> SlurmProvider::terminate(const InstanceHandle& h) {
  if (auto s = co_await cli_->cancel(h.id); !s) co_return s;
  const auto deadline = std::chrono::steady_clock::now() + opts_.cancel_timeout;
  const std::string name = h.data.value("name", "");
  std::string last;
  for (;;) {
    auto found = co_await cli_->job(h.id);
    if (found) {
      bool left = !*found || !is_handles_job(h, **found) || slurm::ended((*found)->state);
      if (left) break;
      last = (*found)->state;
    } else {
      last = found.error().detail;
    }
    if (std::chrono::steady_clock::now() >= deadline)
      co_return make_error(Code::timeout, "slurm job " + h.id + " is still in the queue " +
                                              std::to_string(opts_.cancel_timeout.count()) + " s after scancel: " + last);
    co_await sleep_for(std::chrono::milliseconds(500));
  }
  std::error_code ec;
  fs::create_directories(opts_.state_dir + "/slurm/left", ec);
  std::ofstream(left_marker(h.id)) << name << "\n";
  for (const auto& e : fs::directory_iterator(opts_.state_dir + "/slurm/jobs", ec)) {
    std::ifstream in(e.path());
    auto j = nlohmann::json::parse(in, nullptr, false);
    if (!j.is_discarded() && j.value("id", "") == h.id) fs::remove(e.path(), ec);
  }
  co_return Status{};
}

Task<Result<std::vector<InstanceHandle>>> SlurmProvider::list_tagged(std::string_view tag) {
  auto queued = co_await cli_->jobs();
  if (!queued) co_return queued.error();
  const std::string prefix = "tsum-" + std::string(tag) + "-";
  std::vector<InstanceHandle> out;
  for (const auto& j : *queued)
    if (j.name.starts_with(prefix)) out.push_back({"slurm", j.id, {{"name", j.name}}});
  co_return out;
}

}  // namespace tsum::providers
