// Names of a run's lifecycle states and of the eight phases of t_sum.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace tsum::daemon {

// queued → provisioning → booting → installing → loading → starting → learning → verifying → saving
//   → terminating → done | failed | cancelled
enum class RunStatus {
  queued, provisioning, booting, installing, loading, starting, learning, verifying, saving, terminating,
  done, failed, cancelled
};

inline constexpr std::array<std::string_view, 13> kStatusNames = {
    "queued", "provisioning", "booting", "installing", "loading", "starting", "learning",
    "verifying", "saving", "terminating", "done", "failed", "cancelled"};

constexpr std::string_view status_name(RunStatus s) { return kStatusNames[static_cast<size_t>(s)]; }
// "queued, provisioning, ..., cancelled": what an unknown status is told.
inline std::string status_names() {
  std::string out;
  for (auto n : kStatusNames) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}
constexpr bool is_terminal(RunStatus s) { return s >= RunStatus::done; }
// Why a run failed at its deadline: the daemon's clock passed it, or the machine stopped there on its own clock
// (providers::InstanceStatus::past_deadline). The search runner reads a probe stopped at its limit by it.
inline std::string deadline_reason(long long deadline_s) {
  return "run exceeded its deadline of " + std::to_string(deadline_s) + " s";
}
inline std::optional<RunStatus> parse_status(std::string_view s) {
  for (size_t i = 0; i < kStatusNames.size(); ++i)
    if (kStatusNames[i] == s) return static_cast<RunStatus>(i);
  return std::nullopt;
}

// t_sum = startup + install + load_data + start + learn + verify + save + poweroff
enum class Phase { startup, install, load_data, start, learn, verify, save, poweroff };

inline constexpr std::array<std::string_view, 8> kPhaseNames = {
    "startup", "install", "load_data", "start", "learn", "verify", "save", "poweroff"};

constexpr std::string_view phase_name(Phase p) { return kPhaseNames[static_cast<size_t>(p)]; }
inline std::optional<Phase> parse_phase(std::string_view s) {
  for (size_t i = 0; i < kPhaseNames.size(); ++i)
    if (kPhaseNames[i] == s) return static_cast<Phase>(i);
  return std::nullopt;
}

// Startup and poweroff are timed by the daemon; the six inner phases by the agent inside the instance.
constexpr bool is_agent_phase(Phase p) { return p != Phase::startup && p != Phase::poweroff; }

// The status a run is in while an inner phase runs.
constexpr RunStatus status_of(Phase p) {
  switch (p) {
    case Phase::startup: return RunStatus::booting;
    case Phase::install: return RunStatus::installing;
    case Phase::load_data: return RunStatus::loading;
    case Phase::start: return RunStatus::starting;
    case Phase::learn: return RunStatus::learning;
    case Phase::verify: return RunStatus::verifying;
    case Phase::save: return RunStatus::saving;
    case Phase::poweroff: return RunStatus::terminating;
  }
  return RunStatus::booting;
}

enum class Mark { begin, end };
constexpr std::string_view mark_name(Mark m) { return m == Mark::begin ? "begin" : "end"; }

enum class ClockDomain { daemon, agent };
constexpr std::string_view clock_name(ClockDomain c) { return c == ClockDomain::daemon ? "daemon" : "agent"; }

}  // namespace tsum::daemon
