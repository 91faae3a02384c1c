// Spend caps: per experiment (its spec's `budget`), per schedule (the schedule's `budget`, over all its firings
// together) and per calendar month in UTC over every run (`tsumd serve --monthly-budget`). Amounts are in the
// offers' currency.
//
// What a run costs. Its instance bills from the create call (the startup begin mark, daemon clock) until the
// provider confirms it gone (the poweroff end mark). A run not finished yet accrues up to now; a finished run
// whose poweroff was never confirmed, up to its last update. The up-time is priced under the provider's own
// billing rule (billing/prices/rules.json) or, for a provider without one (local), the experiment's first rule:
//   charge = hourly_price * billed_seconds(rule, up_time) / 3600
//
// Admission. A queued run's worst case is its charge at its deadline (the experiment's `deadline`, else the
// daemon's run deadline); a spot run's adds one billing step (or minimum) for each machine its spot_recovery
// allows after the first (max_interruptions), each of which may round up on its own. It may start only when, in each of its scopes, the worst case stays below
//   cap - charge(finished runs) - reserved(live runs)
// where a live run reserves the larger of its worst case and its charge so far. When it does not fit and no run
// of that scope is live, it never will (a charge only grows): the run is refused. Otherwise it waits.
//
// Enforcement. A live run is stopped once the charge of one of its scopes (finished runs plus live ones up to
// now) reaches the cap. A charge grows in whole billing steps, so the charge before the deciding check was below
// the cap; when checks come at most one billing step apart, the scope's charge at the decision exceeds the cap
// by less than one billing step per live instance of the scope: one step of one instance when one runs.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "billing/prices/billing_rule.h"
#include "common/clock.h"
#include "common/lru.h"
#include "daemon/store/db.h"

namespace tsum::daemon {

struct BudgetOptions {
  std::optional<double> monthly;                  // cap per calendar month (UTC) over every run
  std::chrono::seconds run_deadline{6 * 3600};    // a run's deadline when its experiment names none
};

// What a run's instance costs after up_s seconds under `rule` at `hourly_price`.
double charge(const billing::BillingRule& rule, double hourly_price, double up_s);

// The first second of the UTC calendar month holding unix time `t`.
double month_start(double t);

class Budget {
 public:
  enum class Verdict { start, wait, refuse };
  struct Admission {
    Verdict verdict = Verdict::start;
    std::string reason;  // why not, for wait and refuse: "budget: ..."
  };

  Budget(Db& db, const Clock& clock, BudgetOptions opts) : db_(db), clock_(clock), opts_(std::move(opts)) {}

  // May queued run `run_id` start now? `live`: the runs started and not finished, including ones just started
  // whose status may still read queued.
  Result<Admission> admit(int64_t run_id, const std::set<int64_t>& live);

  // nullopt while live run `run_id` may go on; otherwise why it must stop ("budget: ...").
  Result<std::optional<std::string>> over_cap(int64_t run_id);

  // The charge of every run whose instance started this month (UTC), live ones up to now.
  Result<double> month_charge();
  // The charge of every run ever, by (provider, currency).
  Result<std::map<std::pair<std::string, std::string>, double>> charge_by_provider();
  // Both read a finished run's charge from the sums the database keeps (run_charges, daemon/views/totals.h) once it is
  // settled, and compute the others' (live runs, runs finished since the last settling) from their marks.

  // A finished run's charge, for the sums: nullopt when its instance never started.
  struct Settled {
    std::string provider, currency;
    double month = 0;  // month_start() of its instance's start
    double amount = 0;
  };
  Result<std::optional<Settled>> settled_charge(int64_t run_id);

  const BudgetOptions& options() const { return opts_; }

 private:
  // One run as the budget sees it.
  struct RunCost {
    int64_t id = 0;
    std::string provider, currency;
    bool started = false;
    double begin = 0;    // its instance's create (daemon clock), when started
    double accrued = 0;  // charge so far
    double worst = 0;    // charge at its deadline
  };
  // A cap and the runs it covers.
  struct Scope {
    std::string name;   // "experiment 3", "schedule 2", "the monthly budget"
    double cap = 0;
    std::string where;  // SQL condition over runs r and experiments e
    std::vector<SqlValue> args;
    double settled = 0;  // what settled runs outside `where` already charged the scope (the monthly budget's)
  };
  struct ExperimentInfo {
    std::vector<billing::BillingRule> rules;
    double deadline_s = 0;
    std::optional<double> budget;
    std::optional<int64_t> schedule_id;
    std::map<int, int> retries;  // by config index: a spot config's machines after the first (max_interruptions)
  };

  Result<std::vector<Scope>> scopes_of(int64_t run_id);
  Result<std::vector<RunCost>> costs(const std::string& where, const std::vector<SqlValue>& args);
  Result<ExperimentInfo> experiment_info(int64_t experiment_id);
  // The runs whose charge is not in the sums yet: live ones, and finished ones not settled.
  Result<std::vector<RunCost>> unsettled();
  // What the month's settled runs charged (charge_totals).
  Result<double> settled_in_month(double month);

  Db& db_;
  const Clock& clock_;
  BudgetOptions opts_;
  Lru<int64_t, ExperimentInfo> experiments_{4096};  // specs never change once written
};

}  // namespace tsum::daemon
