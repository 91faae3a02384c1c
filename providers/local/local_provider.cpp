#include "providers/local/local_provider.h"

#include <cstdio>

#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/use_awaitable.hpp>
#include <filesystem>
#include <fstream>
#include <set>

#include "providers/local/process_group.h"
#include "providers/sleep_for.h"

namespace tsum::providers {

namespace fs = std::filesystem;
namespace asio = boost::asio;
using nlohmann::json;

namespace {

std::vector<int> affinity_cpus() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof mask, &mask) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &mask)) cpus.push_back(c);
  return cpus;
}

Result<json> read_json(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return make_error(Code::not_found, p.string() + ": missing");
  auto j = json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return make_error(Code::internal, p.string() + ": not a JSON object");
  return j;
}

Status write_json_atomic(const fs::path& p, const json& j) {
  fs::path tmp = p;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump(2) << "\n";
    if (!out.flush()) return make_error(Code::internal, "write " + tmp.string() + " failed");
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec) return make_error(Code::internal, "rename " + tmp.string() + ": " + ec.message());
  return {};
}

InstanceHandle local_handle(const json& inst) {
  return {"local", inst.value("id", ""),
          {{"sandbox", inst.value("sandbox", "")}, {"pid", inst.value("pid", 0)},
           {"start_ticks", inst.value("start_ticks", uint64_t{0})}, {"cpus", inst.value("cpus", json::array())}}};
}

}  // namespace

LocalProvider::LocalProvider(LocalOptions opts) : opts_(std::move(opts)) {
  if (opts_.cpus.empty()) opts_.cpus = affinity_cpus();
  std::error_code ec;
  opts_.state_dir = fs::absolute(opts_.state_dir, ec).string();  // agents run with the sandbox as cwd
  fs::create_directories(instances_dir(), ec);
}

std::string LocalProvider::instances_dir() const { return (fs::path(opts_.state_dir) / "local").string(); }

namespace {

// "local-<N>c" or "local-<N>c-<G>g" -> {N, G}; {0, 0} for anything else.
std::pair<int, int> parse_local_type(std::string_view t) {
  if (!t.starts_with("local-")) return {0, 0};
  t.remove_prefix(6);
  auto number = [&t](char unit) {
    int n = 0;
    std::size_t i = 0;
    for (; i < t.size() && t[i] >= '0' && t[i] <= '9' && n <= 100000; ++i) n = n * 10 + (t[i] - '0');
    if (i == 0 || i >= t.size() || t[i] != unit || n == 0) return 0;
    t.remove_prefix(i + 1);
    return n;
  };
  const int cores = number('c');
  if (cores == 0) return {0, 0};
  if (t.empty()) return {cores, 0};
  if (!t.starts_with("-")) return {0, 0};
  t.remove_prefix(1);
  const int gpus = number('g');
  return gpus > 0 && t.empty() ? std::pair{cores, gpus} : std::pair{0, 0};
}

}  // namespace

int LocalProvider::cores_of(std::string_view t) { return parse_local_type(t).first; }
int LocalProvider::gpus_of(std::string_view t) { return parse_local_type(t).second; }

std::vector<Offer> LocalProvider::all_offers() const {
  std::vector<Offer> out;
  for (int g = 0; g <= static_cast<int>(opts_.gpus.size()); ++g) {
    for (int n = 1; n <= static_cast<int>(opts_.cpus.size()); ++n) {
      const std::string cores = "local-" + std::to_string(n) + "c";
      Offer o;
      o.provider = "local";
      o.instance_type = g == 0 ? cores : cores + "-" + std::to_string(g) + "g";
      o.vcpus = n;
      o.hourly_price = opts_.catalog.hourly_price(cores, n).value_or(0);
      o.currency = opts_.catalog.currency;
      o.region = "localhost";
      if (const auto* c = opts_.catalog.find(cores)) o.note = "priced as " + c->emulates;
      else if (opts_.catalog.per_vcpu_hourly) o.note = "priced per vCPU";
      if (g > 0) {
        o.gpus = g;
        o.gpu_type = opts_.gpus.front().name;
        o.note += std::string(o.note.empty() ? "" : "; ") + "GPUs not priced (only the cores are)";
      }
      out.push_back(std::move(o));
    }
  }
  return out;
}

Task<Result<std::vector<Offer>>> LocalProvider::offers(const Requirements& req) {
  std::vector<Offer> out;
  for (auto& o : all_offers())
    if (satisfies(o, req)) out.push_back(std::move(o));
  co_return out;
}

Task<Result<InstanceHandle>> LocalProvider::create(const Offer& offer, const LaunchSpec& spec) {
  const auto [n, g] = parse_local_type(offer.instance_type);
  if (n <= 0) co_return make_error(Code::invalid_argument, "unknown local instance type '" + offer.instance_type + "'");
  if (n > static_cast<int>(opts_.cpus.size()))
    co_return make_error(Code::invalid_argument, offer.instance_type + " is larger than this host (" +
                                                     std::to_string(opts_.cpus.size()) + " usable CPUs)");
  if (g > static_cast<int>(opts_.gpus.size()))
    co_return make_error(Code::invalid_argument, offer.instance_type + " is larger than this host (" +
                                                     std::to_string(opts_.gpus.size()) + " GPUs)");
  if (spec.idempotency_token.empty()) co_return make_error(Code::invalid_argument, "create needs an idempotency token");

  // Idempotency and core accounting come from the pidfiles themselves, so they survive a daemon crash.
  std::set<int> busy, busy_gpus;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(instances_dir(), ec)) {
    auto inst = read_json(entry.path() / "instance.json");
    if (!inst) continue;
    if (inst->value("idempotency_token", "") == spec.idempotency_token) co_return local_handle(*inst);
    for (int c : inst->value("cpus", std::vector<int>{})) busy.insert(c);
    for (int c : inst->value("gpus", std::vector<int>{})) busy_gpus.insert(c);
  }
  std::vector<int> cpus;
  for (int c : opts_.cpus)
    if (!busy.count(c) && static_cast<int>(cpus.size()) < n) cpus.push_back(c);
  if (static_cast<int>(cpus.size()) < n)
    co_return make_error(Code::unavailable, "only " + std::to_string(opts_.cpus.size() - busy.size()) +
                                                " of " + std::to_string(opts_.cpus.size()) + " CPUs are free for " +
                                                offer.instance_type);
  std::vector<int> gpus;
  for (const auto& gpu : opts_.gpus)
    if (!busy_gpus.count(gpu.index) && static_cast<int>(gpus.size()) < g) gpus.push_back(gpu.index);
  if (static_cast<int>(gpus.size()) < g)
    co_return make_error(Code::unavailable, "only " + std::to_string(opts_.gpus.size() - busy_gpus.size()) +
                                                " of " + std::to_string(opts_.gpus.size()) + " GPUs are free for " +
                                                offer.instance_type);

  // Named by the whole token (FNV-1a): a multi-node run's nodes share the run and differ only in its end.
  uint64_t token_hash = 1469598103934665603ull;
  for (unsigned char ch : spec.idempotency_token) token_hash = (token_hash ^ ch) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(token_hash));
  std::string id = "local-" + spec.run_id + "-" + std::string(hex, 8);
  fs::path sandbox = fs::path(instances_dir()) / id;
  fs::create_directories(sandbox, ec);
  if (ec) co_return make_error(Code::unavailable, "create sandbox " + sandbox.string() + ": " + ec.message());
  json inst = {{"id", id},           {"run_id", spec.run_id}, {"tag", spec.tag},
               {"idempotency_token", spec.idempotency_token}, {"sandbox", sandbox.string()},
               {"cpus", cpus},       {"gpus", gpus},          {"pid", 0},
               {"start_ticks", 0}};
  // The pidfile exists before the process does, so a crash in between still leaves a findable sandbox.
  if (auto s = write_json_atomic(sandbox / "instance.json", inst); !s) co_return s.error();
  {
    std::ofstream script(sandbox / "agent.sh", std::ios::trunc);
    script << spec.agent_script;
  }
  local::SpawnSpec ss;
  ss.argv = {"/bin/sh", (sandbox / "agent.sh").string()};
  ss.env = spec.env;
  // The docker runtime uses the engine the daemon was told about (DOCKER_HOST, else the default socket).
  // TSUM_NVML_LIBRARY: the NVML the daemon found this host's GPUs through, for the agent's tsum-gpustat;
  // LD_LIBRARY_PATH: where this host keeps the GPU driver's libraries (libcuda, libnvidia-ml), if the loader's
  // cache does not (the trainer bundle's own loader ignores it).
  for (const char* k : {"PATH", "LANG", "HOME", "TMPDIR", "DOCKER_HOST", "DOCKER_CONFIG", "TSUM_NVML_LIBRARY",
                        "LD_LIBRARY_PATH"})
    if (const char* v = getenv(k); v && !ss.env.count(k)) ss.env[k] = v;
  ss.env["TSUM_SANDBOX"] = sandbox.string();
  // The instance's GPUs and no others, numbered as NVML numbers them (tsum-gpustat samples these alone).
  std::string visible;
  for (int gpu : gpus) visible += (visible.empty() ? "" : ",") + std::to_string(gpu);
  ss.env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
  ss.env["CUDA_VISIBLE_DEVICES"] = visible;
  // This host runs one run after another: the agent keeps the unpacked trainer bundle and data sets here, by
  // sha256, and the next run links them instead of downloading and unpacking them again (tsum-agent.sh).
  if (!ss.env.count("TSUM_CACHE_DIR")) ss.env["TSUM_CACHE_DIR"] = (fs::path(opts_.state_dir) / "cache").string();
  ss.cwd = sandbox.string();
  ss.log_path = (sandbox / "agent.log").string();
  ss.cpus = cpus;
  auto spawned = local::spawn_session(ss);
  if (!spawned) {
    fs::remove_all(sandbox, ec);
    co_return spawned.error();
  }
  inst["pid"] = spawned->pid;
  inst["start_ticks"] = spawned->start_ticks;
  if (auto s = write_json_atomic(sandbox / "instance.json", inst); !s) {
    local::signal_group(spawned->pid, spawned->start_ticks, SIGKILL);
    co_return s.error();
  }
  co_return local_handle(inst);
}

Task<Result<InstanceStatus>> LocalProvider::describe(const InstanceHandle& h) {
  fs::path sandbox = h.data.value("sandbox", "");
  auto inst = read_json(sandbox / "instance.json");
  if (sandbox.empty() || !inst) co_return InstanceStatus{InstanceState::gone, "sandbox is gone", ""};
  pid_t pid = inst->value("pid", 0);
  if (pid == 0) co_return InstanceStatus{InstanceState::pending, "agent not started", "127.0.0.1"};
  std::optional<int> exit_status;
  bool alive = local::group_alive(pid, inst->value("start_ticks", uint64_t{0}), &exit_status);
  fs::path exit_file = sandbox / "agent.exit";
  if (exit_status) std::ofstream(exit_file) << *exit_status << "\n";
  if (alive) co_return InstanceStatus{InstanceState::running, "agent running", "127.0.0.1"};
  std::string detail = "agent exited";
  std::optional<int> exited;
  if (std::ifstream in(exit_file); in) {
    int code = -1;
    if (in >> code) detail += " with status " + std::to_string(code), exited = code;
  }
  co_return InstanceStatus{InstanceState::exited, detail, "127.0.0.1", std::nullopt, false, exited};
}

Task<Status> LocalProvider::terminate(const InstanceHandle& h) {
  fs::path sandbox = h.data.value("sandbox", "");
  if (sandbox.empty()) co_return make_error(Code::invalid_argument, "local handle without a sandbox");
  auto inst = read_json(sandbox / "instance.json");
  std::error_code ec;
  if (!inst) {
    fs::remove_all(sandbox, ec);  // no pidfile: nothing can be running from it
    co_return Status{};
  }
  pid_t pid = inst->value("pid", 0);
  uint64_t ticks = inst->value("start_ticks", uint64_t{0});
  if (pid > 0) {
    using clock = std::chrono::steady_clock;
    auto start = clock::now();
    bool killed = false;
    local::signal_group(pid, ticks, SIGTERM);
    while (local::group_alive(pid, ticks)) {
      auto waited = clock::now() - start;
      if (waited > opts_.kill_deadline)
        co_return make_error(Code::timeout, "process group " + std::to_string(pid) + " survived SIGKILL");
      if (!killed && waited > opts_.kill_grace) {
        local::signal_group(pid, ticks, SIGKILL);
        killed = true;
      }
      co_await sleep_for(std::chrono::milliseconds(20));
    }
  }
  fs::remove_all(sandbox, ec);
  if (ec) co_return make_error(Code::internal, "remove " + sandbox.string() + ": " + ec.message());
  co_return Status{};
}

Task<Result<std::vector<InstanceHandle>>> LocalProvider::list_tagged(std::string_view tag) {
  std::vector<InstanceHandle> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(instances_dir(), ec)) {
    auto inst = read_json(entry.path() / "instance.json");
    if (inst && inst->value("tag", "") == tag) out.push_back(local_handle(*inst));
  }
  co_return out;
}

}  // namespace tsum::providers
