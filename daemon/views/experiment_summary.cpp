#include "daemon/views/experiment_summary.h"

#include <cmath>
#include <map>
#include <string>

namespace tsum::daemon {

using nlohmann::json;

namespace {

constexpr std::string_view kCost = "cost:";

// {n, mean, stderr, min, max} from the kept sums; stderr is the sample standard deviation over sqrt(n), 0 for one
// value.
json described(int64_t n, double shift, double s1, double s2, double lo, double hi) {
  const double count = static_cast<double>(n);
  const double mean = shift + s1 / count;
  const double variance = n > 1 ? std::max(0.0, (s2 - s1 * s1 / count) / (count - 1)) : 0.0;
  return {{"n", n}, {"mean", mean}, {"stderr", std::sqrt(variance) / std::sqrt(count)}, {"min", lo}, {"max", hi}};
}

}  // namespace

Status record_run_values(Db& db, const json& view) {
  const int64_t run = view.value("id", int64_t{0}), experiment = view.value("experiment_id", int64_t{0});
  const int64_t config = view.value("config_index", int64_t{0});
  auto del = db.prepare("DELETE FROM run_values WHERE experiment_id = ? AND config_index = ? AND run_id = ?");
  if (!del) return del.error();
  if (auto s = del->bind(experiment, config, run).run(); !s) return s;
  if (view.value("status", "") != "done" || !view["t_sum"].is_number()) return {};
  auto put = [&](const std::string& name, const json& value, std::optional<std::string> currency) -> Status {
    if (!value.is_number() || !std::isfinite(value.get<double>())) return {};
    auto ins = db.prepare(
        "INSERT INTO run_values (experiment_id, config_index, run_id, name, value, currency) VALUES (?, ?, ?, ?, ?, ?)");
    if (!ins) return ins.error();
    return ins->bind(experiment, config, run, name, value.get<double>(), currency).run();
  };
  if (auto s = put("t_sum", view["t_sum"], std::nullopt); !s) return s;
  if (view.contains("phases") && view["phases"].is_object())
    for (const auto& [phase, seconds] : view["phases"].items())
      if (auto s = put(phase, seconds, std::nullopt); !s) return s;
  if (view.contains("cost") && view["cost"].is_object())
    for (const auto& [rule, c] : view["cost"].items())
      if (auto s = put(std::string(kCost) + rule, c.value("amount", json()), c.value("currency", "")); !s) return s;
  auto config_row = db.prepare(
      "INSERT INTO summary_configs VALUES (?, ?, ?) ON CONFLICT (experiment_id, config_index) DO UPDATE SET "
      "config = excluded.config");
  if (!config_row) return config_row.error();
  return config_row->bind(experiment, config, view.value("config", json::object()).dump()).run();
}

Result<json> experiment_summary(Db& db, int64_t experiment_id, const std::vector<billing::BillingRule>& rules) {
  struct Config {
    json config = json::object();
    json t_sum;
    json phases = json::object(), cost = json::object();
    std::map<std::string, std::string> currency;  // by rule
  };
  std::map<int64_t, Config> per;
  {
    auto st = db.prepare(
        "SELECT config_index, name, n, shift, s1, s2, lo, hi, currency FROM summary_values "
        "WHERE experiment_id = ? AND n > 0");
    if (!st) return st.error();
    st->bind(experiment_id);
    for (;;) {
      auto row = st->step();
      if (!row) return row.error();
      if (!*row) break;
      auto& c = per[st->int64(0)];
      const std::string name = st->text(1);
      json d = described(st->int64(2), st->real(3), st->real(4), st->real(5), st->real(6), st->real(7));
      if (name == "t_sum") {
        c.t_sum = std::move(d);
      } else if (name.starts_with(kCost)) {
        c.cost[name.substr(kCost.size())] = std::move(d);
        c.currency[name.substr(kCost.size())] = st->text(8);
      } else {
        c.phases[name] = std::move(d);
      }
    }
  }
  {
    auto st = db.prepare("SELECT config_index, config FROM summary_configs WHERE experiment_id = ?");
    if (!st) return st.error();
    st->bind(experiment_id);
    for (;;) {
      auto row = st->step();
      if (!row) return row.error();
      if (!*row) break;
      if (auto it = per.find(st->int64(0)); it != per.end())
        it->second.config = json::parse(st->text(1), nullptr, false);
    }
  }
  json configs = json::array(), cheapest = json::object(), fastest = nullptr;
  for (auto& [idx, c] : per) {
    if (c.t_sum.is_null()) continue;  // a config none of whose runs is done
    const double mean_t = c.t_sum["mean"].get<double>();
    json cost = json::object(), mean_cost = json::object();
    std::string currency;
    for (const auto& rule : rules) {  // the experiment's rules, in its order; the last one's currency stands
      if (!c.cost.contains(rule.name)) continue;
      cost[rule.name] = c.cost[rule.name];
      mean_cost[rule.name] = c.cost[rule.name]["mean"];
      currency = c.currency[rule.name];
    }
    configs.push_back({{"config_index", idx}, {"config", c.config}, {"runs_done", c.t_sum["n"]},
                       {"mean_t_sum", mean_t}, {"mean_cost", mean_cost}, {"currency", currency},
                       {"t_sum", c.t_sum}, {"phases", c.phases}, {"cost", cost}});
    if (fastest.is_null() || mean_t < fastest["mean_t_sum"].get<double>())
      fastest = {{"config_index", idx}, {"config", c.config}, {"mean_t_sum", mean_t}};
    for (const auto& rule : rules) {
      if (!mean_cost.contains(rule.name)) continue;
      const double amount = mean_cost[rule.name].get<double>();
      auto& best = cheapest[rule.name];
      const bool better = best.is_null() || amount < best["amount"].get<double>() - 1e-12 ||
                          (std::fabs(amount - best["amount"].get<double>()) <= 1e-12 &&
                           mean_t < best["mean_t_sum"].get<double>());
      if (better)
        best = {{"config_index", idx}, {"config", c.config}, {"amount", amount}, {"currency", currency},
                {"mean_t_sum", mean_t}};
    }
  }
  return json{{"configs", configs}, {"cheapest", cheapest}, {"fastest", fastest}};
}

}  // namespace tsum::daemon
