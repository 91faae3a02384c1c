#include "daemon/agent/agent_event.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>

#include "daemon/artifacts/blob_store.h"
#include "daemon/experiments/experiment_spec.h"

namespace tsum::daemon {

using nlohmann::json;

namespace {

// {"cpu_pct": {"min": 1, "avg": 2, "max": 3}, ...}: metric names are short identifiers, values finite. A metric
// no machine could have measured (a negative figure, or min > avg > max out of order) is left out: the mark and
// its other figures are kept, and no impossible number is ever stored or shown.
Result<PhaseStats> parse_stats(const json& j) {
  auto bad = [](std::string d) { return make_error(Code::invalid_argument, "'stats': " + std::move(d)); };
  if (!j.is_object()) return bad("must be an object");
  if (j.size() > 32) return bad("at most 32 metrics");
  PhaseStats out;
  for (const auto& [metric, v] : j.items()) {
    bool name_ok = !metric.empty() && metric.size() <= 32 &&
                   std::all_of(metric.begin(), metric.end(), [](char c) { return std::islower(static_cast<unsigned char>(c)) || c == '_'; });
    if (!name_ok) return bad("metric names are lower_case identifiers, got '" + metric + "'");
    if (!v.is_object() || v.size() != 3) return bad(metric + " must be {\"min\", \"avg\", \"max\"}");
    MinAvgMax m;
    for (auto [key, field] : {std::pair{"min", &m.min}, {"avg", &m.avg}, {"max", &m.max}}) {
      if (!v.contains(key) || !v[key].is_number() || !std::isfinite(v[key].get<double>()))
        return bad(metric + "." + key + " must be a finite number");
      *field = v[key].get<double>();
    }
    const double slack = 1e-9 * std::max({1.0, std::fabs(m.min), std::fabs(m.max)});
    if (m.min < 0 || m.min > m.avg + slack || m.avg > m.max + slack) continue;
    out[metric] = m;
  }
  return out;
}

}  // namespace

Result<AgentEvent> parse_agent_event(const json& j) {
  auto bad = [](std::string d) { return make_error(Code::invalid_argument, std::move(d)); };
  if (!j.is_object()) return bad("the event must be a JSON object");
  for (const auto& [k, _] : j.items())
    if (k != "phase" && k != "mark" && k != "mono_s" && k != "attrs" && k != "stats" && k != "node")
      return bad("unknown field '" + k + "'");
  if (!j.contains("phase") || !j["phase"].is_string()) return bad("'phase' must be a string");
  auto phase = parse_phase(j["phase"].get<std::string>());
  if (!phase) return bad("unknown phase '" + j["phase"].get<std::string>() + "'");
  if (!is_agent_phase(*phase))
    return bad("phase '" + j["phase"].get<std::string>() + "' is timed by the daemon, not the agent");
  if (!j.contains("mark") || !j["mark"].is_string()) return bad("'mark' must be a string");
  static const std::map<std::string, AgentEvent::Kind> kMarks = {{"begin", AgentEvent::Kind::begin},
                                                                  {"end", AgentEvent::Kind::end},
                                                                  {"progress", AgentEvent::Kind::progress},
                                                                  {"error", AgentEvent::Kind::error},
                                                                  {"interrupted", AgentEvent::Kind::interrupted},
                                                                  {"checkpoint", AgentEvent::Kind::checkpoint}};
  auto mark = kMarks.find(j["mark"].get<std::string>());
  if (mark == kMarks.end()) return bad("'mark' must be begin, end, progress, error, interrupted or checkpoint");
  if (!j.contains("mono_s") || !j["mono_s"].is_number()) return bad("'mono_s' must be a number");
  double mono = j["mono_s"].get<double>();
  // At most 1e9 s (31 years): phases are differences of these and t_sum their sum, which then cannot overflow.
  if (!(mono >= 0 && mono <= 1e9)) return bad("'mono_s' must be a number from 0 to 1e9 (seconds)");
  AgentEvent ev{*phase, mark->second, mono, json::object()};
  if (j.contains("attrs")) {
    if (!j["attrs"].is_object()) return bad("'attrs' must be an object");
    ev.attrs = j["attrs"];
  }
  if (j.contains("stats")) {
    auto stats = parse_stats(j["stats"]);
    if (!stats) return stats.error();
    if (ev.kind != AgentEvent::Kind::end) return bad("only an end mark carries 'stats'");
    ev.stats = std::move(*stats);
  }
  if (j.contains("node")) {
    if (!j["node"].is_number_integer() || j["node"].get<int64_t>() < 0 || j["node"].get<int64_t>() >= kMaxNodes)
      return bad("'node' must be an integer from 0 to " + std::to_string(kMaxNodes - 1));
    ev.node = j["node"].get<int>();
  }
  if (ev.kind == AgentEvent::Kind::progress &&
      (!ev.attrs.contains("epoch") || !ev.attrs["epoch"].is_number_integer()))
    return bad("a progress event needs an integer attrs.epoch");
  if (ev.kind == AgentEvent::Kind::interrupted &&
      (!ev.attrs.contains("cloud") || !ev.attrs["cloud"].is_string() || !ev.attrs.contains("notice") ||
       !ev.attrs["notice"].is_string()))
    return bad("an interrupted mark needs attrs.cloud and attrs.notice (strings)");
  if (ev.kind == AgentEvent::Kind::checkpoint) {
    const auto& a = ev.attrs;
    if (!a.contains("artifact") || !a["artifact"].is_string() || a["artifact"].get<std::string>().empty())
      return bad("a checkpoint mark needs attrs.artifact, the artifact's name");
    if (!a.contains("sha256") || !a["sha256"].is_string() || !is_sha256_hex(a["sha256"].get<std::string>()))
      return bad("a checkpoint mark needs attrs.sha256, 64 hex digits");
    if (a.contains("trainer") && !a["trainer"].is_object()) return bad("a checkpoint's attrs.trainer must be an object");
  }
  return ev;
}

}  // namespace tsum::daemon
