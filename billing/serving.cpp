#include "billing/serving.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

namespace tsum::billing {

using nlohmann::json;

namespace {

std::string fixed(double x, int digits) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(digits);
  s << x;
  return s.str();
}

std::string level_name(const CurvePoint& p) {
  return p.mode == "rate" ? "rate " + fixed(p.level, p.level < 10 ? 2 : 1) + "/s"
                          : "concurrency " + fixed(p.level, 0);
}

// A configuration's runs, their levels aggregated per (mode, level).
std::vector<CurvePoint> aggregate(const std::vector<const ServingRun*>& runs, double bound_ms) {
  std::map<std::pair<std::string, double>, std::vector<const ServingLevel*>> by_level;
  for (const auto* r : runs)
    for (const auto& l : r->levels) by_level[{l.mode, l.level}].push_back(&l);
  std::vector<CurvePoint> curve;
  for (const auto& [key, levels] : by_level) {
    CurvePoint p{key.first, key.second, static_cast<int>(levels.size())};
    double sum = 0, sq = 0, images = 0, p99 = 0;
    bool every_p99 = true;
    for (const auto* l : levels) {
      sum += l->throughput_rps;
      sq += l->throughput_rps * l->throughput_rps;
      images += l->images_per_s;
      if (l->p99_ms) p99 += *l->p99_ms;
      else every_p99 = false;
    }
    const double n = static_cast<double>(levels.size());
    p.throughput_rps = sum / n;
    p.images_per_s = images / n;
    if (levels.size() > 1) p.throughput_stderr = std::sqrt(std::max(0.0, (sq - sum * sum / n) / (n - 1)) / n);
    if (every_p99) p.p99_ms = p99 / n;
    p.meets = p.p99_ms && *p.p99_ms <= bound_ms && p.throughput_rps > 0;
    curve.push_back(p);
  }
  return curve;
}

}  // namespace

std::vector<ServingLevel> serving_levels(const json& levels) {
  std::vector<ServingLevel> out;
  if (!levels.is_array()) return out;
  for (const auto& l : levels) {
    if (!l.is_object() || !l.value("throughput_rps", json()).is_number()) continue;
    ServingLevel s;
    s.mode = l.value("mode", std::string("concurrency"));
    s.level = s.mode == "rate" ? l.value("rate", 0.0) : l.value("concurrency", 0.0);
    s.throughput_rps = l["throughput_rps"].get<double>();
    s.images_per_s = l.value("images_per_s", json()).is_number() ? l["images_per_s"].get<double>() : 0.0;
    if (l.value("p99_ms", json()).is_number()) s.p99_ms = l["p99_ms"].get<double>();
    out.push_back(s);
  }
  return out;
}

std::string describe_settings(const json& settings) {
  std::string out;
  for (const char* key : {"max_batch", "max_delay_ms", "threads", "instances"}) {
    if (!settings.contains(key)) continue;
    const json& v = settings[key];
    std::string value = v.dump();
    if (v.is_null()) value = "all";
    if (v.is_number_float()) value = fixed(v.get<double>(), v.get<double>() == std::floor(v.get<double>()) ? 0 : 2);
    out += std::string(out.empty() ? "" : " ") + key + "=" + value;
  }
  return out;
}

Result<ServingPlan> plan_serving(const std::vector<ServingRun>& runs, const ServingRequest& q) {
  if (!(q.p99_ms > 0)) return make_error(Code::invalid_argument, "'p99_ms' must be a positive number of milliseconds");
  if (q.rate && !(*q.rate > 0)) return make_error(Code::invalid_argument, "'rate' must be a positive number of requests/s");
  if (!(q.period_s > 0)) return make_error(Code::invalid_argument, "the serving period must be positive");
  if (runs.empty()) return make_error(Code::invalid_argument, "no measured serving run to plan from");
  std::map<std::string, std::vector<const ServingRun*>> by_config;
  for (const auto& r : runs) by_config[r.config].push_back(&r);
  ServingPlan plan;
  for (const auto& [config, of] : by_config) {
    const ServingRun& first = *of.front();
    ServingChoice c;
    c.config = config;
    c.machine = first.machine.empty() ? config : first.machine;
    c.settings = first.settings;
    c.hourly_price = first.hourly_price;
    c.currency = first.currency;
    c.rule = first.rule.name;
    c.runs = static_cast<int>(of.size());
    c.billed_hourly = cost(first.rule, first.hourly_price, q.period_s) / (q.period_s / 3600.0);
    c.curve = aggregate(of, q.p99_ms);
    for (std::size_t i = 0; i < c.curve.size(); ++i) {
      const auto& p = c.curve[i];
      if (p.p99_ms && (!c.best_p99_ms || *p.p99_ms < *c.best_p99_ms)) c.best_p99_ms = p.p99_ms;
      if (p.meets && (!c.pick || p.throughput_rps > c.curve[*c.pick].throughput_rps)) c.pick = i;
    }
    if (!c.pick) {
      c.reason = c.best_p99_ms ? "no level meets p99 <= " + fixed(q.p99_ms, 1) + " ms: the best p99 measured is " +
                                     fixed(*c.best_p99_ms, 1) + " ms"
                               : "no level had enough answers for a p99 (100 samples)";
      plan.infeasible.push_back(std::move(c));
      continue;
    }
    const CurvePoint& p = c.curve[*c.pick];
    c.sustained_rps = p.throughput_rps;
    const double served = q.rate ? *q.rate : c.sustained_rps;
    c.replicas = q.rate ? static_cast<int>(std::ceil(*q.rate / c.sustained_rps - 1e-9)) : 1;
    c.fleet_hourly = c.replicas * c.billed_hourly;
    c.cost_per_million = c.fleet_hourly * 1e6 / (3600.0 * served);
    const std::string settings = describe_settings(c.settings);
    std::ostringstream why;
    why << (c.replicas > 1 || q.rate ? std::to_string(c.replicas) + " x " : std::string()) << c.machine
        << (settings.empty() ? settings : " with " + settings) << " at "
        << level_name(p) << " sustains " << fixed(c.sustained_rps, 1) << " requests/s each with p99 "
        << fixed(*p.p99_ms, 1) << " ms <= " << fixed(q.p99_ms, 1) << " ms; " << fixed(c.billed_hourly, 4) << " "
        << c.currency << "/h billed " << c.rule << " -> " << fixed(c.cost_per_million, 4) << " " << c.currency
        << " per million requests" << (q.rate ? " at " + fixed(*q.rate, 1) + " requests/s" : std::string());
    c.reason = why.str();
    plan.ranked.push_back(std::move(c));
  }
  std::stable_sort(plan.ranked.begin(), plan.ranked.end(), [](const ServingChoice& a, const ServingChoice& b) {
    if (a.cost_per_million != b.cost_per_million) return a.cost_per_million < b.cost_per_million;
    return a.sustained_rps > b.sustained_rps;
  });
  std::stable_sort(plan.infeasible.begin(), plan.infeasible.end(), [](const ServingChoice& a, const ServingChoice& b) {
    return a.best_p99_ms.value_or(INFINITY) < b.best_p99_ms.value_or(INFINITY);
  });
  return plan;
}

json serving_plan_to_json(const ServingPlan& plan, const ServingRequest& q) {
  auto choice_json = [](const ServingChoice& c) {
    json curve = json::array();
    for (const auto& p : c.curve)
      curve.push_back({{"mode", p.mode},
                       {"level", p.level},
                       {"runs", p.runs},
                       {"throughput_rps", p.throughput_rps},
                       {"throughput_stderr", p.throughput_stderr},
                       {"images_per_s", p.images_per_s},
                       {"p99_ms", p.p99_ms ? json(*p.p99_ms) : json(nullptr)},
                       {"meets_bound", p.meets}});
    json j = {{"config", c.config},
              {"machine", c.machine},
              {"settings", c.settings},
              {"hourly_price", c.hourly_price},
              {"billed_hourly", c.billed_hourly},
              {"currency", c.currency},
              {"billing", c.rule},
              {"runs", c.runs},
              {"curve", curve},
              {"reason", c.reason}};
    if (c.pick) {
      j.update({{"sustained_rps", c.sustained_rps},
                {"at", {{"mode", c.curve[*c.pick].mode}, {"level", c.curve[*c.pick].level}}},
                {"p99_ms", *c.curve[*c.pick].p99_ms},
                {"replicas", c.replicas},
                {"fleet_hourly", c.fleet_hourly},
                {"cost_per_million", c.cost_per_million}});
    } else {
      j["best_p99_ms"] = c.best_p99_ms ? json(*c.best_p99_ms) : json(nullptr);
    }
    return j;
  };
  json ranked = json::array(), infeasible = json::array();
  for (const auto& c : plan.ranked) ranked.push_back(choice_json(c));
  for (const auto& c : plan.infeasible) infeasible.push_back(choice_json(c));
  json out = {{"objective", "serve"},
              {"p99_ms", q.p99_ms},
              {"rate", q.rate ? json(*q.rate) : json(nullptr)},
              {"period_h", q.period_s / 3600.0},
              {"ranked", ranked},
              {"infeasible", infeasible},
              {"pick", plan.ranked.empty() ? json(nullptr) : json(plan.ranked.front().config)}};
  return out;
}

}  // namespace tsum::billing
