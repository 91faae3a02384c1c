// The provider contract: one adapter per cloud (or per local machine). Every call is safe to repeat
// after a crash: create is idempotent by LaunchSpec::idempotency_token, terminate treats "already gone"
// as success, describe reports a vanished instance as InstanceState::gone.
// describe_many asks about many instances at once: the run manager polls each provider with it, once per
// interval for all of that provider's live runs. Its default asks describe() about each handle in turn; an
// adapter whose API can list many instances in one call overrides it (and answers exactly as describe would).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "billing/measured_run.h"
#include "common/result.h"

namespace tsum::providers {

template <class T>
using Task = boost::asio::awaitable<T>;

// What a provider can do, as data.
struct Capabilities {
  bool gpus = false;
  bool spot = false;
  bool docker = false;
  bool native = true;
  // Its machines reach the daemon without its public URL: the same host (local), the daemon itself (trace),
  // or a tunnel the provider makes (ssh). Every other provider's runs need `tsumd serve --public-url`.
  bool reaches_daemon = false;
  // One create() makes all of LaunchSpec::nodes machines (a Slurm job of N nodes, one agent on each, each told
  // its TSUM_NODE). Other providers get nodes = 1, and the daemon calls create once per node of a multi-node run.
  bool gang_nodes = false;
  // Its machines run one run after another and keep a cache of what they unpacked (TSUM_CACHE_DIR: the local host).
  // The daemon fills it before each run, unmeasured, so every run of an experiment finds it warm.
  bool machine_cache = false;
};

struct Requirements {
  std::string instance_type = {};  // empty: any
  int min_vcpus = 0;
  int gpus = 0;
};

struct Offer {
  std::string provider = {};
  std::string instance_type = {};
  int vcpus = 0;
  double memory_gib = 0;
  int gpus = 0;
  std::string gpu_type = {};
  double hourly_price = 0;  // on-demand
  std::string currency = "USD";
  std::string region = {};
  std::string note = {};  // e.g. which cloud family a local type emulates
  double spot_hourly_price = 0;  // the current spot price where the provider has one; 0: none known
  std::string spot_source = {};   // where spot_hourly_price came from, and when
  std::string billing_rule = {};  // the rule this offer is billed by (billing/prices/rule_book); empty: the provider's
  std::string family = {};     // the machine family ("c4", "n2", "Standard_D"); empty: from the instance type's name
  std::string cpu_model = {};  // where the provider says it
  std::string image = {};      // what its machines boot (an AMI id, an image family, a marketplace URN); "" unknown
};

// What a run on `offer` runs on, as stored with the run (runs.machine) and read back by the planner:
// family (the offer's, else billing::instance_family of its type), vcpus, memory_gib, gpus, gpu_type, cpu_model, image;
// unknown fields are left out.
inline nlohmann::json machine_of(const Offer& offer) {
  nlohmann::json m = nlohmann::json::object();
  const std::string family = !offer.family.empty() ? offer.family : billing::instance_family(offer.instance_type);
  if (!family.empty()) m["family"] = family;
  if (offer.vcpus > 0) m["vcpus"] = offer.vcpus;
  if (offer.memory_gib > 0) m["memory_gib"] = offer.memory_gib;
  if (offer.gpus > 0) m["gpus"] = offer.gpus, m["gpu_type"] = offer.gpu_type;
  if (!offer.cpu_model.empty()) m["cpu_model"] = offer.cpu_model;
  if (!offer.image.empty()) m["image"] = offer.image;
  return m;
}

// The planner's view of one machine of `offer` (config id, nodes and price are the caller's).
inline billing::ConfigSpec config_spec_of(const Offer& offer) {
  billing::ConfigSpec c;
  c.provider = offer.provider;
  c.instance_type = offer.instance_type;
  c.cores = offer.vcpus;
  c.gpus = offer.gpus;
  c.gpu_type = offer.gpu_type;
  c.cpu_family = !offer.family.empty() ? offer.family : billing::instance_family(offer.instance_type);
  c.memory_gib = offer.memory_gib;
  c.cpu_model = offer.cpu_model;
  return c;
}

// True when `offer` meets `req`: the named instance type (if any), enough vCPUs and GPUs.
inline bool satisfies(const Offer& offer, const Requirements& req) {
  return (req.instance_type.empty() || offer.instance_type == req.instance_type) &&
         offer.vcpus >= req.min_vcpus && offer.gpus >= req.gpus;
}

struct LaunchSpec {
  std::string run_id = {};
  std::string tag = {};                 // ownership tag, used by list_tagged for orphan sweeps
  std::string idempotency_token = {};   // the same token never creates two instances
  std::string agent_script = {};        // POSIX sh run as the instance's entry point
  // The agent as the daemon serves it ($TSUM_URL/v1/blobs/<agent_sha256>, the run token may fetch it): a boot
  // payload with a size limit (cloud-init's user data) carries a bootstrap that fetches and checks it instead of
  // the script. Empty: the payload carries agent_script.
  std::string agent_sha256 = {};
  std::map<std::string, std::string> env = {};  // passed to the agent (daemon URL, run token, workload)
  std::string runtime = "native";       // "docker": the boot payload installs Docker; the agent pulls the image
  // "spot": the cloud's spare capacity (AWS spot, GCE Spot VMs, Azure Spot, Yandex preemptible), which it may take
  // back with a short notice; deleted, never stopped, when it does. Only where Capabilities::spot.
  std::string market = "on-demand";
  // The zone of the provider's region to place the machine in (a spot run's recovery moves between zones:
  // spot_recovery.zones); empty: the provider's own. Spot clouds only (AWS, GCE, Azure, Yandex).
  std::string zone = {};
  int nodes = 1;                        // machines this create makes: > 1 only where Capabilities::gang_nodes
  // The run's deadline in seconds from this create (0: none). The daemon stops the run there on its own clock; a
  // provider whose machines keep another clock (a trace replay at --trace-speed N: N recorded seconds to each of
  // the daemon's) stops its machine at this second of that clock and says so (InstanceStatus::past_deadline).
  double deadline_s = 0;
};

// Stored verbatim in SQLite; enough to find the instance again after a daemon restart.
struct InstanceHandle {
  std::string provider;
  std::string id;
  nlohmann::json data = nlohmann::json::object();

  nlohmann::json to_json() const { return {{"provider", provider}, {"id", id}, {"data", data}}; }
  static InstanceHandle from_json(const nlohmann::json& j) {
    return {j.value("provider", ""), j.value("id", ""), j.value("data", nlohmann::json::object())};
  }
};

enum class InstanceState { pending, running, exited, gone };

constexpr std::string_view state_name(InstanceState s) {
  switch (s) {
    case InstanceState::pending: return "pending";
    case InstanceState::running: return "running";
    case InstanceState::exited: return "exited";
    case InstanceState::gone: return "gone";
  }
  return "gone";
}

struct InstanceStatus {
  InstanceState state = InstanceState::gone;
  std::string detail;   // e.g. "agent exited with code 3"
  std::string address;  // reachable address, if any
  // Providers that queue a request before a machine starts (a batch scheduler): seconds from submission to
  // start, on the scheduler's own clock; set once the machine has started (running or exited after running),
  // nullopt while it waits in the queue and for providers without a queue. Part of startup, reported apart.
  std::optional<double> queue_wait_s = std::nullopt;
  // The cloud took the machine back (a spot or preemptible machine's interruption: EC2's state reason
  // Server.SpotInstanceTermination, a GCE preemption, an Azure eviction), as its API says.
  bool interrupted = false;
  // An exited machine's agent's exit status, where the provider knows it (the local host).
  std::optional<int> exit_status = std::nullopt;
  // The machine stopped itself at LaunchSpec::deadline_s on its own clock (an exited machine): the run failed
  // by its deadline, as when the daemon's clock passes it.
  bool past_deadline = false;
};

// The most machines of a provider that may run at once by the account's quota, and what it was read from.
struct MachineQuota {
  int machines = 0;
  std::string source;  // e.g. "the vCPU quota 32 over 2-vCPU machines"
};

// A vCPU quota as machines: vcpu_limit over the fewest vCPUs an offer has, at least 1; nullopt with no offers
// or a limit that is not a positive number.
inline std::optional<MachineQuota> machines_within(double vcpu_limit, const std::vector<Offer>& offers, const std::string& what) {
  int fewest = 0;
  for (const auto& o : offers)
    if (o.vcpus > 0 && (fewest == 0 || o.vcpus < fewest)) fewest = o.vcpus;
  if (fewest == 0 || !(vcpu_limit >= 1) || vcpu_limit > 1e7) return std::nullopt;
  const int machines = std::max(1, static_cast<int>(vcpu_limit) / fewest);
  return MachineQuota{machines, what + " " + std::to_string(static_cast<long long>(vcpu_limit)) + " over " +
                                    std::to_string(fewest) + "-vCPU machines"};
}

class Provider {
 public:
  virtual ~Provider() = default;
  virtual std::string_view name() const = 0;
  virtual Capabilities capabilities() const = 0;
  virtual Task<Result<std::vector<Offer>>> offers(const Requirements& req) = 0;
  virtual Task<Result<InstanceHandle>> create(const Offer& offer, const LaunchSpec& spec) = 0;
  virtual Task<Result<InstanceStatus>> describe(const InstanceHandle& h) = 0;
  // One result per handle, in the handles' order: what describe(handles[i]) would say. A failed list call
  // fails the handles it was for, each with the same error.
  virtual Task<std::vector<Result<InstanceStatus>>> describe_many(const std::vector<InstanceHandle>& handles) {
    std::vector<Result<InstanceStatus>> out;
    out.reserve(handles.size());
    for (const auto& h : handles) {
      auto status = co_await describe(h);  // named: GCC 12 mishandles co_await inside call arguments
      out.push_back(std::move(status));
    }
    co_return out;
  }
  virtual Task<Status> terminate(const InstanceHandle& h) = 0;
  virtual Task<Result<std::vector<InstanceHandle>>> list_tagged(std::string_view tag) = 0;
  // The account's quota as machines at once (the daemon's default cap for this provider); not_found where the
  // cloud reports none.
  virtual Task<Result<MachineQuota>> machine_quota() { co_return make_error(Code::not_found, "no quota reported"); }
};

}  // namespace tsum::providers
