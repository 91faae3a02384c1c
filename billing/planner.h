// The planner: ranks candidate configs for an objective by pushing each config's predicted t_sum distribution
// through its billing rule (Monte Carlo over the predictor's samples; billed(E[t]) would be wrong near a step).
//
// Objectives:
//   cost                 minimize E[cost]; ties (within 1e-9 relative) go to the lower E[t_sum].
//   time                 minimize E[wall time]; ties go to the lower E[cost].
//   cost_under_deadline  minimize E[cost] among plans with P(wall time <= deadline) >= deadline_confidence
//                        (0.9); plans that miss it follow, most likely to make it first.
//   budget               minimize E[wall time] among plans with E[cost] <= budget; the rest follow, cheapest first.
//
// Repetitions (N > 1) run either on N fresh instances in parallel (wall time = the slowest; each instance
// pays its own billing steps) or packed one after another on one instance. Packed, the phases paid once are
//   startup, install, load_data, poweroff     (one machine to boot, set up, fill with data and delete)
// and the phases paid per repetition are
//   start, learn, verify, save                (each repetition starts the framework, trains, tests, uploads)
// so packing fills billing steps that are already paid. With packing "best" both are ranked.
//
// Every entry says how many more repetitions (packed on its instance) and epochs fit in its billed time for
// free: the slack billed(t_p90) - t_p90 divided by one repetition's or one epoch's mean time.
#pragma once

#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "billing/prices/billing_rule.h"
#include "billing/prices/catalog.h"
#include "billing/measured_run.h"
#include "billing/model/predictor.h"
#include "common/result.h"

namespace tsum::billing {

enum class Objective { cost, time, cost_under_deadline, budget };
std::string_view objective_name(Objective o);
Result<Objective> parse_objective(std::string_view name);

enum class Packing { fresh, packed };
enum class PackingChoice { fresh, packed, best };
std::string_view packing_name(Packing p);
Result<PackingChoice> parse_packing(std::string_view name);

// A spot candidate's interruptions. The cloud takes machines back at random: a Poisson process of
// rate_per_hour per machine-hour (the one assumption). Each interruption bills the machine's time so far (nothing
// where free_first_hour and it came within the first hour: AWS's rule for the Linux spot instances it interrupts),
// redoes the learning since the last checkpoint (uniform in [0, checkpoint_every_s]: as if no notice came; a
// notice only makes it less) and pays a restart: a next machine to learning again (restart_s where measured, else
// the plan's own startup, install, load_data and start). After on_demand_after interruptions (0: never) the run
// goes on on-demand at on_demand_price; after more than max_interruptions it fails, which misses any deadline and
// costs what it spent plus the whole run again on on-demand (what its user then does).
struct SpotModel {
  double rate_per_hour = 0;
  std::string rate_basis;
  double checkpoint_every_s = 300;
  std::optional<double> restart_s;
  std::string restart_basis;
  int max_interruptions = 6;
  int on_demand_after = 0;
  double on_demand_price = 0;
  bool free_first_hour = false;
  // Where the recovery policy sends the attempts after the first interruption (daemon/runs/recovery.h): the offer
  // it would pick, at recovery_price (0: this offer's) and recovery_rate interruptions per hour (< 0: this
  // offer's). policy names the spot_recovery.policy this plan assumes, recovery_offer that offer.
  std::string policy = "zone";
  std::string recovery_offer;
  double recovery_price = 0;
  double recovery_rate = -1;
};

// The interruption rate of a type's spot machines from what tsum saw of them: a Gamma-Poisson estimate,
// (prior_rate * prior_hours + interruptions) / (prior_hours + machine_hours), so a few machine-hours move it from
// the prior and many make it the measured rate. The basis says which it is.
struct SpotRate {
  double rate_per_hour = 0;
  std::string basis;
};
SpotRate estimate_spot_rate(int interruptions, double machine_hours, double prior_rate, double prior_hours = 1.0);
// The prior when nothing is stored: 0.05 interruptions per machine-hour (one in 20 hours; GCE documents 5-15 %
// of Spot VMs preempted per day, AWS's advisor buckets most types under 5 % a month). GET /v1/plan's
// interruptions_per_hour sets it.
inline constexpr double kSpotPriorRate = 0.05;

struct PlanCandidate {
  ConfigSpec cfg;
  double hourly_price = 0;
  std::string currency = "USD";
  BillingRule rule;
  std::optional<SpotModel> spot;  // a spot candidate (cfg.config ends with "/spot")
  std::string predict_as;         // the config whose measured runs predict this one; empty: cfg.config
};

// A candidate for a catalog offer: its machine (vcpus as cores, GPUs, cpu_family), its hourly price (spot when
// asked and listed), the catalog's currency, and its billing rule: the offer's, else the catalog's, else the
// provider's (user rules first), else per_second_60s_min; capped at the offer's monthly price when the rule has
// a cap. config is "<provider>/<instance_type>" ("/spot" appended for spot: its SpotModel is `spot_model`, with
// the offer's on-demand price; predicted as the on-demand config). invalid_argument for an unknown rule name, or
// spot asked for an offer without a spot price.
Result<PlanCandidate> candidate_from_offer(const Catalog& catalog, const CatalogOffer& offer,
                                           std::span<const BillingRule> user_rules = {}, bool spot = false,
                                           SpotModel spot_model = {.rate_per_hour = kSpotPriorRate});

struct PlanRequest {
  Objective objective = Objective::cost;
  std::optional<double> deadline_s;  // required by cost_under_deadline; also reported for other objectives
  std::optional<double> budget;      // required by budget, in the candidates' currency
  double deadline_confidence = 0.9;
  int repetitions = 1;
  PackingChoice packing = PackingChoice::best;
  uint64_t seed = 1;                 // picks which samples make up each repetition
};

struct PlanEntry {
  PlanCandidate candidate;
  Packing packing = Packing::fresh;
  int repetitions = 1;
  PhaseSeconds phases{};  // mean seconds per phase of one repetition
  double t_mean = 0;      // wall time of the whole plan
  double t_p10 = 0;
  double t_p90 = 0;
  double billed_s = 0;    // expected, summed over instances
  double cost = 0;        // expected
  double p_deadline = 1;  // P(wall time <= deadline), 1 without a deadline
  bool feasible = true;
  double p_best = 0;      // share of Monte Carlo draws in which this entry is the best
  std::string basis;      // of learn, see Prediction
  std::string overhead_basis;
  int runs = 0;
  int free_repetitions = 0;
  int free_epochs = 0;
  // A spot candidate: expected interruptions, learning redone and restart time over the plan, and the share of
  // draws in which it failed (interrupted more than max_interruptions).
  double interruptions = 0;
  double lost_s = 0;
  double restart_s = 0;
  double p_fail = 0;
  std::string reason;

  std::string label() const;  // config, plus "(packed)"/"(fresh)" when repetitions > 1
};

struct Plan {
  PlanRequest request;
  std::vector<PlanEntry> ranked;  // best first
  std::vector<std::pair<std::string, std::string>> unpredictable;  // config, why
  std::string spread;  // where the run-to-run spread comes from (Predictor::spread_source)
};

// invalid_argument for a missing deadline/budget, repetitions < 1, or no candidates; a candidate the
// predictor cannot predict is listed in `unpredictable`, and it is an error only when none can be predicted.
Result<Plan> make_plan(const Predictor& predictor, std::span<const PlanCandidate> candidates, const PlanRequest& req);

nlohmann::json plan_to_json(const Plan& plan);

// One run of c on one fresh machine from the prediction's draw i: its expected cost and wall time; for a spot
// candidate with interruptions drawn from rng (failed: more than it may have).
struct RunDraw {
  double cost = 0, wall = 0;
  bool failed = false;
};
RunDraw draw_run(const PlanCandidate& c, const Prediction& p, size_t i, std::mt19937_64& rng);

// The phases a packed plan pays once, in kPhaseNames order.
bool paid_once_when_packed(int phase);

}  // namespace tsum::billing
