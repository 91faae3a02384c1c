// Which queued runs may start now. Pure: the dispatcher feeds it the queue and the live runs.
//
// A run of N nodes counts N machines against the caps per provider and type and takes N times its cores.
// Limits: a global cap, caps per provider and per instance type (cloud quotas), and on the local provider
// the host's cores: two live local runs never share a core, so a local-<N>c run waits for N free cores.
// An ssh host (provider "ssh", instance type = host name) runs one run at a time.
// Fairness: experiments take turns. Each pick goes to the experiment with the fewest live runs (counting
// the ones picked in this call), ties to the oldest queued run; within an experiment runs start in queue
// order, though a later run that fits may start while an earlier one waits for cores.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <set>
#include <vector>

namespace tsum::daemon {

// What runs at once unless the flags say otherwise: 64 runs in all; each cloud or cluster provider 8 machines
// (default_caps), a cloud's then the account's quota where the cloud reports one (Provider::machine_quota,
// asked after start); the local provider by its cores, an ssh host one run, a trace replay only by the global cap.
inline constexpr int kDefaultGlobalCap = 64;
inline constexpr int kDefaultProviderCap = 8;

struct QueueLimits {
  int global = kDefaultGlobalCap;
  std::map<std::string, int> per_provider;   // absent: no cap beyond the global one
  std::map<std::string, int> per_type;       // by instance type
  int local_cores = 0;                       // host cores for the local provider; 0: do not check
  std::set<std::string> defaulted;           // the per_provider caps default_caps set (no flag named them)
};

struct QueueEntry {
  int64_t run_id = 0;
  int64_t experiment_id = 0;
  std::string provider;
  std::string instance_type;
  int nodes = 1;  // machines of the type it takes at once
};

// Cores a local instance type takes (local-4c → 4); 0 for anything else.
int local_cores_of(const std::string& provider, const std::string& instance_type);

// The runs of `queued` (oldest first) to start now, in start order.
std::vector<int64_t> admit(const std::vector<QueueEntry>& queued, const std::vector<QueueEntry>& live,
                           const QueueLimits& limits);

// Caps each provider of `providers` that has none yet (a flag's wins) at kDefaultProviderCap, but local (its
// cores), ssh (one run a host) and trace (a replay).
void default_caps(QueueLimits& limits, const std::vector<std::string>& providers);

// The limits in one line, as the daemon logs them at start: "runs at once: 64 in all; aws 8 machines, ...".
std::string describe_limits(const QueueLimits& limits, const std::vector<std::string>& providers);

// Parses "local=1,aws=4" into a cap map. Empty text gives an empty map; false on a malformed entry.
bool parse_caps(const std::string& text, std::map<std::string, int>* out);

}  // namespace tsum::daemon
