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
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "billing/billing_rule.h"
#include "billing/catalog.h"
#include "billing/measured_run.h"
#include "billing/predictor.h"
#include "common/result.h"

namespace tsum::billing {

enum class Objective { cost, time, cost_under_deadline, budget };
std::string_view objective_name(Objective o);
Result<Objective> parse_objective(std::string_view name);

enum class Packing { fresh, packed };
enum class PackingChoice { fresh, packed, best };
std::string_view packing_name(Packing p);
Result<PackingChoice> parse_packing(std::string_view name);

struct PlanCandidate {
  ConfigSpec cfg;
  double hourly_price = 0;
  std::string currency = "USD";
  BillingRule rule;
};

// A candidate for a catalog offer: its machine (vcpus as cores, GPUs, cpu_family), its hourly price (spot when
// asked and listed), the catalog's currency, and its billing rule: the offer's, else the catalog's, else the
// provider's (user rules first), else per_second_60s_min; capped at the offer's monthly price when the rule has
// a cap. config is "<provider>/<instance_type>" ("/spot" appended for spot). invalid_argument for an unknown
// rule name, or spot asked for an offer without a spot price.
Result<PlanCandidate> candidate_from_offer(const Catalog& catalog, const CatalogOffer& offer,
                                           std::span<const BillingRule> user_rules = {}, bool spot = false);

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

// The phases a packed plan pays once, in kPhaseNames order.
bool paid_once_when_packed(int phase);

}  // namespace tsum::billing
