// Measured-trace cases for the probe search, and what a search on one costs the user in all.
//
// A case is one job measured once on each of its configs (a table: config, price, runtime, completed), like the
// published traces in ../shared/testdata: Scout (11 Hadoop/Spark jobs x 69 AWS clusters), IBM's multi-cloud set
// (Dask jobs on 82 configs of 3 clouds, with timeouts and failures) and TrimTuner (TensorFlow on t2 types x 6
// worker counts). generated_case makes tables of the same shape with a known seed: 50-70 configs in 3-8 families
// of 1-5 node clusters, memory cliffs (a working set that does not fit slows a run several times or times it
// out), runs that time out, single noisy runs with the odd straggler.
//
// replay_total runs tsum's adaptive search on a case as a user would (POST /v1/searches: from nothing, whole runs
// as probes, the default exploration budget unless one is given) and scores it by the user's total: its probes
// plus future_runs planned runs on its pick, against the planned runs on the optimum.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "billing/search/search.h"
#include "planner_calibration.h"

namespace tsum::bench {

// The q-quantile of v, the lower of two neighbours (no interpolation); NaN when v is empty.
inline double quantile(std::vector<double> v, double q) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(std::floor(q * static_cast<double>(v.size() - 1)))];
}

struct TraceRow {
  billing::PlanCandidate cand;
  double runtime = 0;      // seconds of the job (the learn phase); a lower bound when not completed
  bool completed = true;   // false: timed out or failed; never the optimum, a probe of it fails
};

struct TraceCase {
  std::string name;
  std::vector<TraceRow> rows;
  billing::PhaseSeconds overheads{};  // the other phases of t_sum around the runtime
  // Generated tables: the job's working set (GiB over the cluster; 0 = none). With `sampled`, each probe reports
  // what an agent would have seen of memory (MeasuredRun::memory_used): its share of the cluster's memory, full
  // where the working set does not fit.
  double working_set_gib = 0;
  bool sampled = false;
};

// Scout's runs are its jobs' runtimes alone: 165 s of startup, install, load_data, start, save and poweroff around.
inline constexpr billing::PhaseSeconds kScoutOverheads = {60, 45, 30, 10, 0, 0, 10, 10};

// Each returns the cases of the file (empty when it cannot be read). IBM: one case per workload with a completed
// run; TrimTuner: one case per setting (learning rate, batch size, synchronism) at the full training set.
std::vector<TraceCase> load_scout(const std::string& runs_csv);
std::vector<TraceCase> load_ibm(const std::string& csv);
std::vector<TraceCase> load_trimtuner(const std::string& csv, const std::string& model);

TraceCase generated_case(uint64_t seed);
// A table of the same shape whose job has a working set above all but its most memory-rich ~15% of configs, and runs
// 6-9x slower below it (issue 64: Scout's Spark job whose runtime falls 6-9x past ~200 GiB): the cheap small
// clusters a search probes first all sit below the cliff.
TraceCase cliff_case(uint64_t seed);

billing::MeasuredRun run_of(const TraceCase& c, const TraceRow& r);
double row_t_sum(const TraceCase& c, const TraceRow& r);
// Under the row's rule; infinity when the run did not complete.
double true_cost(const TraceCase& c, const TraceRow& r);
// Probes replay the rows: a completed row is its run; one that did not complete, or that runs past the probe's
// max_s, is a failed run billed for what it ran.
billing::ProbeFn prober(const TraceCase& c);

struct Total {
  bool ok = false;             // the search returned a recommendation
  std::string error;
  int probes = 0;
  double spent = 0;            // its probes
  double budget = 0;           // the budget at its last round
  double first_budget = 0;     // the budget once its first measurement came in
  double optimum = 0;          // true cost of one run at the optimum
  double pick_cost = 0;        // true cost of one run at its pick
  double first_cost = 0;       // of its first probe's config (infinity when that probe failed)
  double first_probe_cost = 0; // what the first probe cost
  double ratio = 0;            // (spent + runs x pick_cost) / (runs x optimum)
  double first_ratio = 0;      // (first_probe_cost + runs x first_cost) / (runs x optimum)
  double regret = 0;           // pick_cost / optimum - 1
  bool blind = false;          // the pick costs over 5% more than the best config it measured
  bool budget_kept = true;     // no probe started whose p90 did not fit, and the spend never passed the budget
  bool total_kept = true;      // total <= the first probe's total + first_budget
  bool budget_fixed = true;    // the budget never changed once set, and never fell below what was spent
  int stopped_early = 0;       // probes stopped where they could no longer beat the best measured config
  bool stops_kept = true;      // each cost at most that config's run, and its own config was no cheaper
  // A stop on the budget named the affordable probe worth most and its saving at most its cost, or said none fits.
  bool budget_stop_kept = true;
  int free_probes = 0;         // probes chosen without the model (in doubt, or to spend what max_probes allows)
  bool doubted = false;        // the search stopped trusting its model
  // A table with a working set: whether some probe ran a config whose cluster memory holds it (the cliff found).
  bool probed_above_working_set = false;
  std::string stop_reason;
  std::string probes_text;     // each probe: config, its cost over the optimum's run, and why
};

// One search on `c` with every row priced under `rule`. max_probes 0 = no limit; probe_budget < 0 = none given.
// With `calibration`, every round of the search is scored there (its bands, its pick and P(within 5%)).
Total replay_total(TraceCase c, const billing::BillingRule& rule, double future_runs, int max_probes,
                   const billing::PredictorOptions& predictor, double probe_budget = -1,
                   Calibration* calibration = nullptr);

// Random search on `c` under `rule`: the median, over `orders` random draws of k distinct configs, of the regret
// of the best completed one (infinity when none completed), as issue 50 judges a search against it.
double random_median_regret(TraceCase c, const billing::BillingRule& rule, int k, int orders, uint64_t seed);

}  // namespace tsum::bench
