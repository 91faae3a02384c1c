// A search, its progress and its answer as JSON (GET /v1/searches/{id}).
#include <cmath>

#include "billing/search/search.h"

namespace tsum::billing {

using nlohmann::json;

namespace {
json progress_json(const SearchResult& r) {
  json trace = json::array();
  for (const auto& s : r.trace) {
    json j = {{"config", s.config},        {"why", s.why},         {"expected_gain", s.expected_gain},
              {"expected_probe_cost", s.expected_probe_cost}, {"probe_cost", s.probe_cost}, {"t_sum", s.t_sum}};
    if (s.limit_s > 0) j["limit_s"] = s.limit_s, j["limit"] = s.limit;
    if (!s.error.empty()) j["error"] = s.error;
    if (s.memory_used) j["memory_used"] = *s.memory_used;
    trace.push_back(std::move(j));
  }
  json rounds = json::array();
  for (const auto& rd : r.rounds) {
    json bands = json::array();
    for (const auto& b : rd.bands)
      bands.push_back({{"config", b.config}, {"p10", b.p10}, {"mean", b.mean}, {"p90", b.p90}, {"probed", b.probed},
                       {"basis", b.basis}});
    json round = {{"probes", rd.probes},     {"pick", rd.pick},       {"pick_value", rd.pick_value},
                  {"p_within", rd.p_within}, {"pick_measured", rd.pick_measured}, {"predicted", rd.predicted},
                  {"bands", std::move(bands)}};
    if (!rd.best_measured.empty())
      round["best_measured"] = rd.best_measured, round["p_beats_measured"] = rd.p_beats_measured;
    rounds.push_back(std::move(round));
  }
  return {{"trace", std::move(trace)}, {"rounds", std::move(rounds)}, {"tolerance", r.tolerance}, {"spent", r.spent},
          {"budget", std::isfinite(r.budget) ? json(r.budget) : json(nullptr)}};
}
}  // namespace

json search_progress_json(const SearchResult& r, const ProbeStep& next) {
  json out = progress_json(r);
  out["next"] = {{"config", next.config}, {"why", next.why}, {"expected_probe_cost", next.expected_probe_cost}};
  return out;
}

json search_to_json(const SearchResult& r) {
  json out = progress_json(r);
  json plan = plan_to_json(r.plan);
  out["recommendation"] = plan["ranked"].empty() ? json(nullptr) : plan["ranked"][0];
  if (!out["recommendation"].is_null()) {
    auto& rec = out["recommendation"];
    rec["measured"] = r.measured;
    rec["why"] = r.recommendation_basis;
    if (!r.rounds.empty())
      for (const auto& b : r.rounds.back().bands)
        if (b.config == rec["config"]) rec["band"] = {{"p10", b.p10}, {"mean", b.mean}, {"p90", b.p90}};
  }
  out["p_within"] = r.p_within;
  out["model_check"] = {{"probes", r.model_check.probes}, {"outside_band", r.model_check.outside},
                        {"explains", r.model_check.explains}};
  out["improvement_check"] = {{"probes", r.improvement_check.predicted.size()},
                              {"improved", r.improvement_check.improved},
                              {"expected_improved", r.improvement_check.expected_improved()},
                              {"explains", r.improvement_check.explains}};
  // What the next probe would have been worth when it stopped, and the budget it had.
  out["expected_saving"] = r.expected_saving;
  out["next_probe_cost"] = r.expected_probe_cost;
  out["stop_reason"] = r.stop_reason;
  out["doubt"] = r.doubt;
  out["plan"] = std::move(plan);
  return out;
}

}  // namespace tsum::billing
