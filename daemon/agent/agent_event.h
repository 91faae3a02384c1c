// The room daemon/agent/ owns what runs on a machine and what comes back from it: the agent script (tsum-agent.sh, its
// protocol in README.md), the one parser of its events, and each run's log lines. It calls the store, runs/ (the
// ledger takes the events), experiments/ and artifacts/.
//
// What an agent reports about its run, and the one parser of it (POST /v1/runs/{id}/events).
//
// An event is a JSON object:
//   {"phase": "learn", "mark": "begin"|"end"|"progress"|"error"|"interrupted"|"checkpoint", "mono_s": 12.5,
//    "attrs": {...}, "stats": {"cpu_pct": {"min": 1, "avg": 2, "max": 3}, ...}, "node": 0}
// phase is one the agent times (not startup or poweroff); mono_s a finite number >= 0 on the agent's monotonic
// clock; attrs an object (a progress mark needs an integer attrs.epoch); stats only on an end mark, at most 32
// metrics named in lower_case, each {min, avg, max} finite; node an integer in [0, kMaxNodes). Any other field,
// type or value is invalid_argument naming it.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "common/result.h"
#include "daemon/runs/run_status.h"

namespace tsum::daemon {

// One resource metric over a phase (e.g. cpu_pct, rss_bytes, read_bps), measured inside the instance.
struct MinAvgMax {
  double min = 0, avg = 0, max = 0;
};
using PhaseStats = std::map<std::string, MinAvgMax>;

// What an agent reports: a phase's begin or end on its monotonic clock, a learn-progress sample,
// an error that ends the run, the cloud's notice of an interruption (attrs: cloud, notice), or a
// checkpoint it delivered (attrs: artifact, sha256, trainer: tsum-train's checkpoint event).
struct AgentEvent {
  enum class Kind { begin, end, progress, error, interrupted, checkpoint };
  Phase phase = Phase::install;
  Kind kind = Kind::begin;
  double mono_s = 0;
  nlohmann::json attrs = nlohmann::json::object();
  PhaseStats stats;  // end marks only: the phase's resource statistics
  int node = 0;      // which machine of a multi-node run (0 for a run of one)
};

// The event in `j` (see the file comment), or invalid_argument saying what is wrong.
Result<AgentEvent> parse_agent_event(const nlohmann::json& j);

}  // namespace tsum::daemon
