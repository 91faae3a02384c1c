#include "daemon/schedules/budget.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

#include "billing/prices/rule_book.h"
#include "daemon/experiments/experiment_spec.h"
#include "daemon/runs/run_status.h"

namespace tsum::daemon {

namespace {

// Float noise must not decide a comparison of money: amounts within a billionth of the cap count as equal.
constexpr double kEpsilon = 1e-9;

std::string money(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

// Runs with their price (all their nodes': every node is billed), status and the daemon-clock marks that bound their instance's up-time.
// A run of several attempts (spot machines) counts from its first machine's create to its current one's poweroff,
// at the current price: the sum of its attempts' bills is at most that, rounding aside.
constexpr std::string_view kCostQuery =
    "SELECT r.id, r.experiment_id, r.provider, r.currency, r.hourly_price * r.nodes, r.status, r.updated_at, "
    "(SELECT MIN(t) FROM phase_marks m WHERE m.run_id = r.id AND m.phase = 'startup' AND m.mark = 'begin' "
    "AND m.clock = 'daemon'), "
    "(SELECT t FROM phase_marks m WHERE m.run_id = r.id AND m.attempt = r.attempt AND m.phase = 'poweroff' "
    "AND m.mark = 'end' AND m.clock = 'daemon'), "
    "r.config_index "
    "FROM runs r JOIN experiments e ON e.id = r.experiment_id WHERE ";

// Runs whose instance may be up (every status between queued and the end), and finished runs not settled yet
// (daemon/views/totals.h): the runs whose charge is not in the sums the database keeps.
constexpr std::string_view kLive =
    "'provisioning', 'booting', 'installing', 'loading', 'starting', 'learning', 'verifying', 'saving', 'terminating'";
constexpr std::string_view kUnsettled =
    "r.id IN (SELECT run_id FROM run_settle WHERE run_id NOT IN (SELECT run_id FROM run_charges))";

}  // namespace

double charge(const billing::BillingRule& rule, double hourly_price, double up_s) {
  return billing::cost(rule, hourly_price, up_s);
}

double month_start(double t) {
  std::time_t secs = static_cast<std::time_t>(std::floor(t));
  std::tm tm{};
  gmtime_r(&secs, &tm);
  tm.tm_mday = 1;
  tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
  return static_cast<double>(timegm(&tm));
}

Result<Budget::ExperimentInfo> Budget::experiment_info(int64_t experiment_id) {
  if (auto* held = experiments_.find(experiment_id)) return *held;
  auto st = db_.prepare("SELECT spec, schedule_id FROM experiments WHERE id = ?");
  if (!st) return st.error();
  st->bind(experiment_id);
  auto row = st->step();
  if (!row) return row.error();
  if (!*row) return make_error(Code::not_found, "experiment " + std::to_string(experiment_id) + " not found");
  auto spec = parse_experiment_spec(st->text(0));
  if (!spec) return spec.error();
  ExperimentInfo info;
  info.rules = spec->billing;
  info.deadline_s = spec->deadline_s ? *spec->deadline_s : static_cast<double>(opts_.run_deadline.count());
  info.budget = spec->budget;
  for (size_t v = 0; v < spec->variants(); ++v)
    if (spec->config_of(v).market == "spot") info.retries[static_cast<int>(v)] = spec->config_of(v).spot_recovery.max_interruptions;
  if (!st->is_null(1)) info.schedule_id = st->int64(1);
  experiments_.put(experiment_id, info);
  return info;
}

Result<std::vector<Budget::RunCost>> Budget::costs(const std::string& where, const std::vector<SqlValue>& args) {
  auto st = db_.prepare(std::string(kCostQuery) + where);
  if (!st) return st.error();
  st->bind_all(args);
  struct Row {
    RunCost cost;
    int64_t experiment_id;
    double hourly_price, updated_at;
    bool finished;
    std::optional<double> begin, end;
    int config_index = 0;
  };
  std::vector<Row> rows;
  for (;;) {
    auto more = st->step();
    if (!more) return more.error();
    if (!*more) break;
    Row r{.cost = {.id = st->int64(0), .provider = st->text(2), .currency = st->text(3)},
          .experiment_id = st->int64(1), .hourly_price = st->real(4), .updated_at = st->real(6),
          .finished = is_terminal(parse_status(st->text(5)).value_or(RunStatus::failed)),
          .begin = st->opt_real(7), .end = st->opt_real(8), .config_index = static_cast<int>(st->int64(9))};
    rows.push_back(std::move(r));
  }
  std::vector<RunCost> out;
  const double now = clock_.now_s();
  for (auto& r : rows) {  // the statement is done: experiment_info may prepare its own
    auto info = experiment_info(r.experiment_id);
    if (!info) return info.error();
    auto rule = billing::rule_for_provider(r.cost.provider);
    const billing::BillingRule& used = rule ? *rule : info->rules.front();
    r.cost.worst = charge(used, r.hourly_price, info->deadline_s);
    // A spot run may need a machine per interruption it is allowed: each one can round up a billing step (or
    // pay a minimum) of its own within the same deadline.
    if (auto it = info->retries.find(r.config_index); it != info->retries.end())
      r.cost.worst += it->second * charge(used, r.hourly_price, 1e-9);
    r.cost.started = r.begin.has_value();
    if (r.begin) {
      r.cost.begin = *r.begin;
      double until = r.end ? *r.end : r.finished ? r.updated_at : now;
      r.cost.accrued = billing::cost(used, r.hourly_price, std::max(0.0, until - *r.begin),
                                     billing::start_offset_of(used, *r.begin));
    }
    out.push_back(std::move(r.cost));
  }
  return out;
}

Result<std::vector<Budget::Scope>> Budget::scopes_of(int64_t run_id) {
  auto st = db_.prepare("SELECT experiment_id FROM runs WHERE id = ?");
  if (!st) return st.error();
  st->bind(run_id);
  auto row = st->step();
  if (!row) return row.error();
  if (!*row) return make_error(Code::not_found, "run " + std::to_string(run_id) + " not found");
  const int64_t experiment_id = st->int64(0);
  auto info = experiment_info(experiment_id);
  if (!info) return info.error();
  std::vector<Scope> out;
  if (info->budget)
    out.push_back({"experiment " + std::to_string(experiment_id), *info->budget, "r.experiment_id = ?",
                   {experiment_id}});
  if (info->schedule_id) {
    auto sched = db_.prepare("SELECT budget FROM schedules WHERE id = ?");
    if (!sched) return sched.error();
    sched->bind(*info->schedule_id);
    auto found = sched->step();
    if (!found) return found.error();
    if (*found && !sched->is_null(0))
      out.push_back({"schedule " + std::to_string(*info->schedule_id), sched->real(0), "e.schedule_id = ?",
                     {*info->schedule_id}});
  }
  if (opts_.monthly) {
    // The month's settled runs from the sums; every run not settled yet whose instance started this month, and
    // every unfinished one (a queued one just started has no mark), from its marks.
    const double month = month_start(clock_.now_s());
    auto settled = settled_in_month(month);
    if (!settled) return settled.error();
    out.push_back({"the monthly budget", *opts_.monthly,
                   "(r.status NOT IN ('done', 'failed', 'cancelled') OR (" + std::string(kUnsettled) +
                       " AND r.id IN (SELECT run_id FROM phase_marks WHERE phase = 'startup' AND mark = 'begin' AND "
                       "clock = 'daemon' AND t >= ?)))",
                   {month}, *settled});
  }
  return out;
}

Result<Budget::Admission> Budget::admit(int64_t run_id, const std::set<int64_t>& live) {
  auto scopes = scopes_of(run_id);
  if (!scopes) return scopes.error();
  for (const auto& scope : *scopes) {
    auto runs = costs(scope.where, scope.args);
    if (!runs) return runs.error();
    double used = scope.settled, worst = 0;
    bool any_live = false;
    for (const auto& r : *runs) {
      if (r.id == run_id) {
        worst = r.worst;
        continue;
      }
      bool is_live = live.count(r.id) > 0;
      any_live = any_live || is_live;
      used += is_live ? std::max(r.accrued, r.worst) : r.accrued;
    }
    const double left = scope.cap - used;
    if (worst < left - kEpsilon) continue;
    std::string why = "budget: " + scope.name + " has " + money(std::max(0.0, left)) + " of " + money(scope.cap) +
                      " left, and run " + std::to_string(run_id) + " may cost up to " + money(worst);
    return Admission{any_live ? Verdict::wait : Verdict::refuse, why};
  }
  return Admission{};
}

Result<std::optional<std::string>> Budget::over_cap(int64_t run_id) {
  auto scopes = scopes_of(run_id);
  if (!scopes) return scopes.error();
  for (const auto& scope : *scopes) {
    auto runs = costs(scope.where, scope.args);
    if (!runs) return runs.error();
    double total = scope.settled;
    for (const auto& r : *runs) total += r.accrued;
    if (total >= scope.cap - kEpsilon)
      return std::optional<std::string>("budget: " + scope.name + " reached its cap of " + money(scope.cap) +
                                        " (" + money(total) + " billed)");
  }
  return std::optional<std::string>{};
}

Result<std::vector<Budget::RunCost>> Budget::unsettled() {
  return costs("(r.status IN (" + std::string(kLive) + ") OR " + std::string(kUnsettled) + ")", {});
}

Result<double> Budget::settled_in_month(double month) {
  auto st = db_.prepare("SELECT COALESCE(SUM(amount), 0) FROM charge_totals WHERE month = ?");
  if (!st) return st.error();
  st->bind(month);
  auto row = st->step();
  if (!row) return row.error();
  return *row ? st->real(0) : 0.0;
}

Result<double> Budget::month_charge() {
  const double month = month_start(clock_.now_s());
  auto total = settled_in_month(month);
  if (!total) return total.error();
  auto runs = unsettled();
  if (!runs) return runs.error();
  for (const auto& r : *runs)
    if (r.started && r.begin >= month) *total += r.accrued;
  return *total;
}

Result<std::map<std::pair<std::string, std::string>, double>> Budget::charge_by_provider() {
  std::map<std::pair<std::string, std::string>, double> out;
  auto st = db_.prepare("SELECT provider, currency, SUM(amount) FROM charge_totals GROUP BY provider, currency");
  if (!st) return st.error();
  for (;;) {
    auto row = st->step();
    if (!row) return row.error();
    if (!*row) break;
    out[{st->text(0), st->text(1)}] += st->real(2);
  }
  auto runs = unsettled();
  if (!runs) return runs.error();
  for (const auto& r : *runs)
    if (r.started) out[{r.provider, r.currency}] += r.accrued;
  return out;
}

Result<std::optional<Budget::Settled>> Budget::settled_charge(int64_t run_id) {
  auto runs = costs("r.id = ?", {run_id});
  if (!runs) return runs.error();
  if (runs->empty() || !runs->front().started) return std::optional<Settled>{};
  const auto& r = runs->front();
  return std::optional<Settled>(Settled{r.provider, r.currency, month_start(r.begin), r.accrued});
}

}  // namespace tsum::daemon
