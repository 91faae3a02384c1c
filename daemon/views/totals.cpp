#include "daemon/views/totals.h"

#include "daemon/views/experiment_summary.h"
#include "daemon/planning/plan_history.h"

namespace tsum::daemon {

using nlohmann::json;

Status Totals::settle_run(int64_t run_id) {
  for (const char* sql : {"DELETE FROM run_costs WHERE run_id = ?", "DELETE FROM run_charges WHERE run_id = ?"}) {
    auto del = db_.prepare(sql);
    if (!del) return del.error();
    if (auto s = del->bind(run_id).run(); !s) return s;
  }
  auto view = views_.run(run_id);
  if (!view) return view.error();
  const json& cost = (*view)["cost"];
  for (const auto& [rule, c] : cost.items()) {
    auto ins = db_.prepare(
        "INSERT INTO run_costs (run_id, rule, experiment_id, currency, amount) VALUES (?, ?, ?, ?, ?)");
    if (!ins) return ins.error();
    if (auto s = ins->bind(run_id, rule, (*view)["experiment_id"].get<int64_t>(), c.value("currency", ""),
                           c.value("amount", 0.0)).run();
        !s)
      return s;
  }
  if (auto s = record_plan_sample(db_, views_.store(), *view); !s) return s;
  if (auto s = record_run_values(db_, *view); !s) return s;
  auto charge = budget_.settled_charge(run_id);
  if (!charge) return charge.error();
  if (*charge) {
    auto ins = db_.prepare("INSERT INTO run_charges (run_id, provider, currency, month, amount) VALUES (?, ?, ?, ?, ?)");
    if (!ins) return ins.error();
    if (auto s = ins->bind(run_id, (*charge)->provider, (*charge)->currency, (*charge)->month, (*charge)->amount).run();
        !s)
      return s;
  }
  return {};
}

Result<int> Totals::settle(int limit) {
  std::vector<int64_t> ids;
  {
    auto st = db_.prepare("SELECT run_id FROM run_settle ORDER BY run_id LIMIT ?");
    if (!st) return st.error();
    auto queued = st->bind(int64_t{limit}).int64s();
    if (!queued) return queued.error();
    ids = std::move(*queued);
  }
  if (ids.empty()) return 0;
  Transaction tx(db_);
  if (!tx.begun()) return tx.begun().error();
  for (int64_t id : ids) {
    // Each run in a savepoint of its own: one that cannot be priced (its stored spec no longer parses) is left out
    // of the sums, and out of the queue, rather than stopping every run after it.
    Transaction one(db_);
    if (!one.begun()) return one.begun().error();
    if (settle_run(id))
      if (auto c = one.commit(); !c) return c.error();
  }
  // Each leaves the queue, settled or not (what could not be settled had its figures rolled back).
  for (int64_t id : ids) {
    auto done = db_.prepare("DELETE FROM run_settle WHERE run_id = ?");
    if (!done) return done.error();
    if (auto s = done->bind(id).run(); !s) return s.error();
  }
  if (auto s = tx.commit(); !s) return s.error();
  return static_cast<int>(ids.size());
}

Result<json> Totals::experiment_summary(int64_t experiment_id, const std::vector<billing::BillingRule>& rules) {
  return daemon::experiment_summary(db_, experiment_id, rules);
}

Status Totals::settle_all() {
  for (;;) {
    auto n = settle();
    if (!n) return n.error();
    if (*n == 0) return {};
  }
}

Result<std::map<std::pair<std::string, std::string>, double>> Totals::spend() {
  auto st = db_.prepare("SELECT rule, currency, amount FROM spend_totals");
  if (!st) return st.error();
  std::map<std::pair<std::string, std::string>, double> out;
  for (;;) {
    auto row = st->step();
    if (!row) return row.error();
    if (!*row) break;
    out[{st->text(0), st->text(1)}] = std::max(0.0, st->real(2));  // a sum taken down to 0 may read -1e-18
  }
  return out;
}

Result<std::vector<Totals::Spend>> Totals::experiment_spend(int64_t experiment_id) {
  auto st = db_.prepare(
      "SELECT rule, currency, amount, runs FROM experiment_spend WHERE experiment_id = ? AND runs > 0 ORDER BY rule");
  if (!st) return st.error();
  st->bind(experiment_id);
  std::vector<Spend> out;
  for (;;) {
    auto row = st->step();
    if (!row) return row.error();
    if (!*row) break;
    out.push_back({st->text(0), st->text(1), std::max(0.0, st->real(2)), st->int64(3)});
  }
  return out;
}

Result<std::vector<Totals::Bucket>> Totals::phase_histogram() {
  auto st = db_.prepare("SELECT phase, bucket, n, sum FROM phase_hist");
  if (!st) return st.error();
  std::vector<Bucket> out;
  for (;;) {
    auto row = st->step();
    if (!row) return row.error();
    if (!*row) break;
    out.push_back({st->text(0), static_cast<int>(st->int64(1)), st->int64(2), st->real(3)});
  }
  return out;
}

}  // namespace tsum::daemon
