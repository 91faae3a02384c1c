// What the planner knows of spot interruptions, from the ledger (issue 28): how often a type's spot machines were
// taken back (each attempt's machine time and outcome), and what a restart cost (a resumed attempt's wait for its
// machine plus its startup, install, load_data and start), folded into a billing::SpotModel for a candidate.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "billing/planner.h"
#include "daemon/experiments/experiment_spec.h"
#include "daemon/store/store.h"

namespace tsum::daemon {

// A resumed attempt's restart overheads in a run view (its `attempts`): for each attempt after the first whose
// phases up to learning are known, the seconds from the previous attempt's end to its learning: the wait for the
// next machine and that machine's startup, install, load_data and start.
std::vector<double> restarts_of(const nlohmann::json& run_view);

// A run view's phases as one machine's run of the workload, for the predictor: for a run of one attempt its own;
// for a run that needed several, the first attempt's startup, install, load_data and start, the learning every
// attempt kept (learned less redone) plus the last one's, and the last one's verify, save and poweroff. A phase the
// job did not mark (the view's `unmarked`) took no time of its own: 0. Null where a phase is not known.
nlohmann::json one_machine_phases(const nlohmann::json& run_view);

// What a run that did not finish (stopped at its deadline, failed, cancelled) was billed, as its phases: those it
// measured (one_machine_phases), and the rest of its machines' up time (its attempts' `up_s`, create to gone on the
// daemon's clock) in the first phase it did not finish, the one it was in when it stopped. A probe stopped at its
// deadline while learning thus costs what its machine was up, and its learn phase is the seconds it learned: a
// lower bound on the config's learn time. Phases after that one are 0; nullopt where nothing was measured.
// stopped_at_s: the run was stopped at its deadline, that many seconds after its create, so its machine was up at
// least that long before its poweroff, whatever the daemon's clock saw (a trace replay's machine keeps its own).
std::optional<std::array<double, 8>> unfinished_phases(const nlohmann::json& run_view,
                                                       std::optional<double> stopped_at_s = std::nullopt);

// Whether a run view's install or load_data was cold: it downloaded the bundle or the data set, or pulled its
// image, where a warm machine finds them in its cache. What tells configs measured alike from configs that were not.
bool ran_cold(const nlohmann::json& run_view);

// The configuration a run view measured, as plans and curves name it: "provider/instance_type", and the workload
// fields its experiment varied (config.workload) with their values, e.g. "local/local-2c max_batch=4 max_delay_ms=2":
// a server's settings are part of what a serving plan compares, so runs of different settings stay apart.
std::string measured_config(const nlohmann::json& run_view);

// The interruption model of one spot candidate: its type's rate (billing::estimate_spot_rate over `seen`, from
// `prior_rate`), the run's recovery policy, the on-demand price it falls back to, AWS's free first hour, and the
// mean of `restarts` (empty: the plan's own phases stand in, as the basis says).
billing::SpotModel spot_model(const SpotExposure& seen, const RunConfig::SpotRecovery& recovery,
                              const std::string& provider, double on_demand_price, double prior_rate,
                              const std::vector<double>& restarts);

}  // namespace tsum::daemon
