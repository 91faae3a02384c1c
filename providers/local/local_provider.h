// The local provider: the embedded default. An "instance" is
//   - a sandbox directory  <state_dir>/local/<id>/  holding instance.json (the pidfile), the agent script,
//     its log and whatever the agent puts there;
//   - a CPU affinity set of N cores of this host, never shared with another live local instance;
//   - the agent's process group (the agent runs as a session leader; the trainer inherits its group).
// Types are local-1c … local-<N>c for the N CPUs the daemon may use; larger offers are refused. On a host with
// GPUs (LocalOptions::gpus: the daemon reads them through NVML at start) local-<N>c-<G>g adds G of them, never
// shared with another live local instance either: the agent sees only those (CUDA_VISIBLE_DEVICES, in NVML's PCI
// order), so a cpu-vs-gpu experiment on one machine runs both sides. A GPU has no local price: such an offer costs
// its cores' price, and its note says so.
// The docker runtime runs the trainer in the engine DOCKER_HOST names (or the default socket), passed on from the
// daemon's environment; the agent gives the container its own CPUs (--cpuset-cpus).
// terminate() kills the process group (SIGTERM, then SIGKILL after a grace period), removes the sandbox and
// is idempotent. list_tagged() scans the pidfiles, so leftovers of a crashed daemon are found again.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "billing/prices/catalog.h"
#include "providers/provider.h"

namespace tsum::providers {

struct LocalGpu {
  int index = 0;     // NVML's (PCI bus order)
  std::string name;  // e.g. "NVIDIA H200"
};

struct LocalOptions {
  std::string state_dir;                       // required
  billing::Catalog catalog;                    // prices for local-Nc
  std::vector<int> cpus;                       // usable CPU ids; empty: this process's affinity mask
  std::vector<LocalGpu> gpus;                  // this host's GPUs; empty: none
  std::chrono::milliseconds kill_grace{3000};  // SIGTERM → SIGKILL
  std::chrono::milliseconds kill_deadline{10000};
};

class LocalProvider final : public Provider {
 public:
  explicit LocalProvider(LocalOptions opts);

  std::string_view name() const override { return "local"; }
  Capabilities capabilities() const override {
    return {.gpus = !opts_.gpus.empty(), .spot = false, .docker = true, .native = true, .reaches_daemon = true,
            .machine_cache = true};
  }
  Task<Result<std::vector<Offer>>> offers(const Requirements& req) override;
  Task<Result<InstanceHandle>> create(const Offer& offer, const LaunchSpec& spec) override;
  Task<Result<InstanceStatus>> describe(const InstanceHandle& h) override;
  Task<Status> terminate(const InstanceHandle& h) override;
  Task<Result<std::vector<InstanceHandle>>> list_tagged(std::string_view tag) override;

  // Parse "local-<N>c" and "local-<N>c-<G>g": the cores, and the GPUs (0 without the suffix); both 0 when the name
  // is of neither form.
  static int cores_of(std::string_view instance_type);
  static int gpus_of(std::string_view instance_type);
  const std::vector<int>& cpus() const { return opts_.cpus; }

 private:
  std::vector<Offer> all_offers() const;
  std::string instances_dir() const;

  LocalOptions opts_;
};

}  // namespace tsum::providers
