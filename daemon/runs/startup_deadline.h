// How long a run may go from create to the agent's first event (its startup phase) before the run manager
// gives up on it, per provider. Each configurable provider takes `startup_deadline_s` in its section of the
// config file (docs/config.md); these are the defaults. They cover what create itself waits for (a cloud's
// operations, ssh's power_on, boot and copies) plus the instance's boot until the agent speaks.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace tsum::daemon {

struct StartupDeadlineDefault {
  std::string_view provider;
  std::chrono::seconds deadline;
};

inline constexpr StartupDeadlineDefault kStartupDeadlines[] = {
    {"aws", std::chrono::seconds(600)},     {"gce", std::chrono::seconds(600)},
    {"azure", std::chrono::seconds(900)},   // a resource group, a network and a VM, each waited for
    {"hetzner", std::chrono::seconds(600)}, {"yandex", std::chrono::seconds(600)},
    {"ssh", std::chrono::seconds(900)},     // power_on + boot_timeout_s (300) + push_timeout_s (600) fit
    {"local", std::chrono::seconds(120)},   // a process on this machine
    {"trace", std::chrono::seconds(120)},   // beyond the replay's own startup (see App::add_trace_provider)
    {"slurm", std::chrono::seconds(3600)},  // sbatch plus the job's wait in the queue (recorded as queue_wait_s)
    {"kubernetes", std::chrono::seconds(900)},  // scheduling and the image pull (queue_wait_s), then the agent
    {"byo", std::chrono::seconds(24 * 3600)},  // until someone joins a machine: the join code's lifetime
};

// A provider's default; 600 s for one not in the table.
constexpr std::chrono::seconds default_startup_deadline(std::string_view provider) {
  for (const auto& d : kStartupDeadlines)
    if (d.provider == provider) return d.deadline;
  return std::chrono::seconds(600);
}

// The config field that sets `provider`'s deadline, e.g. "providers.aws.startup_deadline_s"; empty for a
// provider with no section in the config file (local, trace).
inline std::string startup_deadline_field(std::string_view provider) {
  for (std::string_view n : {"aws", "gce", "azure", "hetzner", "yandex", "ssh", "slurm", "kubernetes"})
    if (n == provider) return "providers." + std::string(provider) + ".startup_deadline_s";
  return {};
}

}  // namespace tsum::daemon
