#include "daemon/store/store.h"

#include <algorithm>

namespace tsum::daemon {

using nlohmann::json;

namespace {
constexpr std::string_view kRunColumns =
    "SELECT id, experiment_id, config_index, repetition, provider, instance_type, hourly_price, currency, "
    "status, reason, instance, created_at, updated_at, nodes, queue_wait_s, machine, attempt, market, region, zone "
    "FROM runs ";

RunRow read_run(const Stmt& st) {
  RunRow r;
  r.id = st.int64(0);
  r.experiment_id = st.int64(1);
  r.config_index = static_cast<int>(st.int64(2));
  r.repetition = static_cast<int>(st.int64(3));
  r.provider = st.text(4);
  r.instance_type = st.text(5);
  r.hourly_price = st.real(6);
  r.currency = st.text(7);
  r.status = parse_status(st.text(8)).value_or(RunStatus::failed);
  r.reason = st.text(9);
  if (!st.is_null(10)) {
    auto j = json::parse(st.text(10), nullptr, false);
    if (!j.is_discarded()) r.instance = std::move(j);
  }
  r.created_at = st.real(11);
  r.updated_at = st.real(12);
  r.nodes = static_cast<int>(st.int64(13));
  r.queue_wait_s = st.opt_real(14);
  r.machine = nlohmann::json::parse(st.text(15), nullptr, false);
  if (!r.machine.is_object()) r.machine = nlohmann::json::object();
  r.attempt = static_cast<int>(st.int64(16));
  r.market = st.text(17);
  r.region = st.text(18);
  r.zone = st.text(19);
  return r;
}
}  // namespace

Result<int64_t> Store::create_experiment(const ExperimentSpec& spec, const std::vector<PricedConfig>& priced,
                                         std::optional<int64_t> schedule_id, std::optional<int64_t> search_id) {
  // The one door to the experiments table: what is stored must read back, so a spec the daemon derived itself
  // (a search's probe, a schedule's firing) is checked as a user's is.
  const std::string stored = spec.to_json().dump();
  if (auto back = parse_experiment_spec(stored); !back)
    return make_error(Code::invalid_argument, "experiment '" + spec.name + "' not stored: " + back.error().detail);
  Transaction tx(db_);
  if (!tx.begun()) return tx.begun().error();
  double now = clock_.now_s();
  auto ins = db_.prepare(
      "INSERT INTO experiments (name, spec, created_at, schedule_id, search_id) VALUES (?, ?, ?, ?, ?)");
  if (!ins) return ins.error();
  if (auto s = ins->bind(spec.name, stored, now, schedule_id, search_id).run(); !s) return s.error();
  int64_t id = db_.last_insert_id();
  // Repetition-major order, so a queue drained in id order interleaves the configs.
  // A variant is a config with one of the workloads (ExperimentSpec::variants); its index is the run's config_index.
  const size_t per_config = std::max<size_t>(1, spec.workloads.size());
  for (int rep = 1; rep <= spec.repetitions; ++rep) {
    for (size_t i = 0; i < priced.size() * per_config; ++i) {
      const auto& p = priced[i / per_config];
      auto st = db_.prepare(
          "INSERT INTO runs (experiment_id, config_index, repetition, provider, instance_type, hourly_price, "
          "currency, status, created_at, updated_at, nodes, machine, market) "
          "VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?)");
      if (!st) return st.error();
      if (auto s = st->bind(id, static_cast<int64_t>(i), rep, p.config.provider, p.config.instance_type,
                            p.hourly_price, p.currency, now, now, int64_t{p.config.nodes}, p.machine.dump(),
                            p.config.market).run();
          !s)
        return s.error();
    }
  }
  if (auto s = tx.commit(); !s) return s.error();
  return id;
}

Result<ExperimentRow> Store::experiment(int64_t id) {
  auto e = experiment_as_stored(id);
  if (e && !e->unreadable.empty()) return make_error(Code::internal, e->unreadable);
  return e;
}

Result<ExperimentRow> Store::experiment_as_stored(int64_t id) {
  if (auto* held = experiments_.find(id)) return *held;
  auto st = db_.prepare("SELECT id, name, spec, created_at, schedule_id, search_id FROM experiments WHERE id = ?");
  if (!st) return st.error();
  st->bind(id);
  auto row = st->step();
  if (!row) return row.error();
  if (!*row) return make_error(Code::not_found, "experiment " + std::to_string(id) + " not found");
  auto spec = parse_experiment_spec(st->text(2));
  ExperimentRow e{st->int64(0), st->text(1), spec ? std::move(*spec) : ExperimentSpec{}, st->real(3),
                  st->opt_int64(4), st->opt_int64(5)};
  if (!spec) {
    e.unreadable = "experiment " + std::to_string(id) + ": its stored spec does not parse: " + spec.error().detail;
    return e;
  }
  if (!db_.in_transaction()) experiments_.put(id, e);
  return e;
}

Result<std::vector<int64_t>> Store::experiment_ids() {
  auto st = db_.prepare("SELECT id FROM experiments ORDER BY id");
  if (!st) return st.error();
  return st->int64s();
}

Result<std::vector<ExperimentRow>> Store::experiments() {
  auto ids = experiment_ids();
  if (!ids) return ids.error();
  std::vector<ExperimentRow> out;
  for (auto id : *ids) {
    auto e = experiment_as_stored(id);
    if (!e) return e.error();
    out.push_back(std::move(*e));
  }
  return out;
}

Result<std::vector<RunRow>> Store::query_runs(std::string_view where, const std::vector<SqlValue>& args) {
  auto st = db_.prepare(std::string(kRunColumns) + std::string(where));
  if (!st) return st.error();
  st->bind_all(args);
  std::vector<RunRow> out;
  for (;;) {
    auto row = st->step();
    if (!row) return row.error();
    if (!*row) break;
    out.push_back(read_run(*st));
  }
  return out;
}

Result<RunRow> Store::run(int64_t id) {
  auto rows = query_runs("WHERE id = ?", {id});
  if (!rows) return rows.error();
  if (rows->empty()) return make_error(Code::not_found, "run " + std::to_string(id) + " not found");
  return std::move(rows->front());
}

Result<std::vector<RunRow>> Store::runs_of(int64_t experiment_id) {
  return query_runs("WHERE experiment_id = ? ORDER BY config_index, repetition", {experiment_id});
}

Result<std::vector<RunRow>> Store::runs_in(std::initializer_list<RunStatus> statuses) {
  std::string where = "WHERE status IN (";
  std::vector<SqlValue> args;
  for (auto s : statuses) {
    where += args.empty() ? "?" : ", ?";
    args.emplace_back(std::string(status_name(s)));
  }
  return query_runs(where + ") ORDER BY id", args);
}

Result<std::vector<QueueEntry>> Store::queue_heads(int64_t per_experiment) {
  auto experiments = db_.prepare("SELECT experiment_id FROM run_counts WHERE status = 'queued' AND n > 0");
  if (!experiments) return experiments.error();
  auto ids = experiments->int64s();
  if (!ids) return ids.error();
  std::vector<QueueEntry> out;
  for (int64_t experiment : *ids) {
    auto st = db_.prepare(
        "SELECT id, provider, instance_type, nodes FROM runs WHERE experiment_id = ? AND status = 'queued' "
        "ORDER BY id LIMIT ?");
    if (!st) return st.error();
    st->bind(experiment, per_experiment);
    for (;;) {
      auto row = st->step();
      if (!row) return row.error();
      if (!*row) break;
      out.push_back({st->int64(0), experiment, st->text(1), st->text(2), static_cast<int>(st->int64(3))});
    }
  }
  std::sort(out.begin(), out.end(), [](const QueueEntry& a, const QueueEntry& b) { return a.run_id < b.run_id; });
  return out;
}

Result<std::vector<json>> Store::epochs_of(int64_t run_id) {
  auto st = db_.prepare("SELECT attrs FROM run_epochs WHERE run_id = ? ORDER BY epoch");
  if (!st) return st.error();
  st->bind(run_id);
  std::vector<json> out;
  for (;;) {
    auto row = st->step();
    if (!row) return row.error();
    if (!*row) break;
    auto j = json::parse(st->text(0), nullptr, false);
    if (!j.is_discarded()) out.push_back(std::move(j));
  }
  return out;
}

Result<SpotExposure> Store::spot_exposure(const std::string& provider, const std::string& instance_type,
                                          const std::optional<std::string>& region) {
  auto st = db_.prepare(
      "SELECT COUNT(*), COALESCE(SUM(outcome = 'interrupted'), 0), COALESCE(SUM(ended_at - started_at), 0) "
      "FROM run_attempts WHERE provider = ?1 AND instance_type = ?2 AND market = 'spot' AND ended_at IS NOT NULL "
      "AND (?3 = 0 OR region = ?4)");
  if (!st) return st.error();
  st->bind(provider, instance_type, int64_t{region.has_value()}, region.value_or(""));
  auto row = st->step();
  if (!row) return row.error();
  SpotExposure out;
  if (*row) {
    out.attempts = static_cast<int>(st->int64(0));
    out.interruptions = static_cast<int>(st->int64(1));
    out.machine_hours = std::max(0.0, st->real(2)) / 3600;
  }
  return out;
}

}  // namespace tsum::daemon
