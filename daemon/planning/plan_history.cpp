#include "daemon/planning/plan_history.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>

#include "daemon/runs/admission.h"
#include "daemon/planning/past_runs.h"
#include "daemon/planning/spot_risk.h"

namespace tsum::daemon {

using nlohmann::json;

namespace {

constexpr const char* kPhaseColumns = "startup, install, load_data, start, learn, verify, save, poweroff";

// The id plan_workloads gives `workload`'s text; 0 where it has none yet and `add` is false.
Result<int64_t> workload_id(Db& db, const std::string& workload, bool add) {
  if (add) {
    auto ins = db.prepare("INSERT INTO plan_workloads (workload) VALUES (?) ON CONFLICT (workload) DO NOTHING");
    if (!ins) return ins.error();
    if (auto s = ins->bind(workload).run(); !s) return s.error();
  }
  auto st = db.prepare("SELECT id FROM plan_workloads WHERE workload = ?");
  if (!st) return st.error();
  st->bind(workload);
  auto row = st->step();
  if (!row) return row.error();
  return *row ? st->int64(0) : int64_t{0};
}

}  // namespace

Status record_plan_sample(Db& db, Store& store, const json& view) {
  const int64_t run_id = view.value("id", int64_t{0});
  for (const char* sql : {"DELETE FROM plan_samples WHERE run_id = ?", "DELETE FROM serving_samples WHERE run_id = ?"}) {
    auto del = db.prepare(sql);
    if (!del) return del.error();
    if (auto s = del->bind(run_id).run(); !s) return s;
  }
  const std::vector<double> restarts = restarts_of(view);
  json phases = json::object();
  const bool done = view.value("status", "") == "done";
  bool measured = done && view["t_sum"].is_number();
  if (measured) {
    phases = one_machine_phases(view);  // a run of several machines as one machine's
    for (auto name : billing::kPhaseNames) measured = measured && phases[std::string(name)].is_number();
  }
  const bool served = done && view.contains("metrics") && view["metrics"].is_object() &&
                      view["metrics"].contains("serving");
  if (!measured && restarts.empty() && !served) return {};
  auto experiment = store.experiment_as_stored(view.value("experiment_id", int64_t{0}));
  if (!experiment) return experiment.error();
  if (!experiment->unreadable.empty()) return {};  // its workload is unknown: no plan can ask for it
  auto workload = workload_id(db, experiment->spec.workload().to_json().dump(), true);
  if (!workload) return workload.error();
  if (served) {
    json row = view;
    for (const char* bulky : {"epochs", "stats", "attempts", "node_phases"}) row.erase(bulky);
    auto ins = db.prepare("INSERT INTO serving_samples (run_id, workload_id, view) VALUES (?, ?, ?)");
    if (!ins) return ins.error();
    if (auto s = ins->bind(run_id, *workload, row.dump(-1, ' ', false, json::error_handler_t::replace)).run(); !s)
      return s;
  }
  if (!measured && restarts.empty()) return {};
  const json& config = view["config"];
  const std::string provider = config.value("provider", ""), type = config.value("instance_type", "");
  const int64_t nodes = view.value("nodes", int64_t{1});
  auto ins = db.prepare(std::string("INSERT INTO plan_samples (run_id, workload_id, config, provider, instance_type, "
                                    "nodes, machine, measured, cold, restarts, ") +
                        kPhaseColumns + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  if (!ins) return ins.error();
  std::optional<std::string> restarts_text;
  if (!restarts.empty()) restarts_text = json(restarts).dump();
  ins->bind(run_id, *workload, provider + "/" + type + (nodes > 1 ? "/x" + std::to_string(nodes) : ""), provider,
            type, nodes, view.value("machine", json::object()).dump(), int64_t{measured},
            int64_t{measured && ran_cold(view)}, restarts_text);
  for (size_t i = 0; i < billing::kPhaseNames.size(); ++i) {
    std::optional<double> seconds;
    if (measured) seconds = phases[std::string(billing::kPhaseNames[i])].get<double>();
    ins->bind_at(static_cast<int>(11 + i), seconds);
  }
  return ins->run();
}

Result<PlanHistory> plan_history(Db& db, const json& workload, int per_config) {
  PlanHistory h;
  auto id = workload_id(db, workload.dump(), false);
  if (!id) return id.error();
  if (*id == 0) return h;
  // The workload's configs, one index seek each (a skip scan), not one step per sample.
  auto configs = db.prepare(
      "WITH RECURSIVE c(config) AS ("
      " SELECT MIN(config) FROM plan_samples WHERE workload_id = ?1"
      " UNION ALL"
      " SELECT (SELECT MIN(config) FROM plan_samples WHERE workload_id = ?1 AND config > c.config) FROM c"
      " WHERE c.config IS NOT NULL)"
      " SELECT config FROM c WHERE config IS NOT NULL");
  if (!configs) return configs.error();
  configs->bind(*id);
  std::vector<std::string> names;
  for (;;) {
    auto row = configs->step();
    if (!row) return row.error();
    if (!*row) break;
    names.push_back(configs->text(0));
  }
  for (const auto& config : names) {
    std::map<std::string, billing::ConfigSpec> machines;  // the config's, by the machine's JSON: each parsed once
    auto st = db.prepare(std::string("SELECT provider, instance_type, nodes, machine, measured, cold, restarts, ") +
                         kPhaseColumns +
                         " FROM plan_samples WHERE workload_id = ? AND config = ? ORDER BY run_id DESC LIMIT ?");
    if (!st) return st.error();
    st->bind(*id, config, int64_t{per_config});
    for (;;) {
      auto row = st->step();
      if (!row) return row.error();
      if (!*row) break;
      if (!st->is_null(6)) {
        auto r = json::parse(st->text(6), nullptr, false);
        if (r.is_array())
          for (const auto& v : r)
            if (v.is_number()) h.restarts.push_back(v.get<double>());
      }
      if (st->int64(4) == 0) continue;
      billing::MeasuredRun m;
      const std::string machine = st->text(3);
      auto known = machines.find(machine);
      if (known == machines.end()) {
        billing::ConfigSpec cfg;
        cfg.config = config;
        cfg.provider = st->text(0);
        cfg.instance_type = st->text(1);
        cfg.cores = local_cores_of(cfg.provider, cfg.instance_type);
        cfg.cpu_family = billing::instance_family(cfg.instance_type);
        cfg.nodes = static_cast<int>(st->int64(2));
        describe_machine(json::parse(machine, nullptr, false), cfg);
        known = machines.emplace(machine, cfg).first;
      }
      m.cfg = known->second;
      for (size_t i = 0; i < billing::kPhaseNames.size(); ++i) m.phases[i] = st->real(static_cast<int>(7 + i));
      ++(st->int64(5) ? h.cold : h.warm);
      h.runs.push_back(std::move(m));
    }
  }
  return h;
}

Result<std::vector<json>> serving_history(Db& db, const json& workload, int limit) {
  std::vector<json> out;
  auto id = workload_id(db, workload.dump(), false);
  if (!id) return id.error();
  if (*id == 0) return out;
  auto st = db.prepare("SELECT view FROM serving_samples WHERE workload_id = ? ORDER BY run_id DESC LIMIT ?");
  if (!st) return st.error();
  st->bind(*id, int64_t{limit});
  for (;;) {
    auto row = st->step();
    if (!row) return row.error();
    if (!*row) break;
    auto view = json::parse(st->text(0), nullptr, false);
    if (view.is_object()) out.push_back(std::move(view));
  }
  std::reverse(out.begin(), out.end());  // oldest first, as the runs were made
  return out;
}

}  // namespace tsum::daemon
