#include "daemon/planning/spot_risk.h"

#include <cmath>
#include <cstdio>

namespace tsum::daemon {

using nlohmann::json;

std::vector<double> restarts_of(const json& run_view) {
  std::vector<double> out;
  const json attempts = run_view.value("attempts", json::array());
  for (size_t k = 1; k < attempts.size(); ++k) {
    const json& prev = attempts[k - 1];
    const json& a = attempts[k];
    if (!prev["ended_at"].is_number() || !a["started_at"].is_number()) continue;
    double s = a["started_at"].get<double>() - prev["ended_at"].get<double>();
    bool known = s >= 0;
    for (const char* ph : {"startup", "install", "load_data", "start"}) {
      const json& v = a["phases"][ph];
      known = known && v.is_number();
      if (known) s += v.get<double>();
    }
    if (known) out.push_back(s);
  }
  return out;
}

json one_machine_phases(const json& run_view) {
  const json attempts = run_view.value("attempts", json::array());
  json phases = run_view.value("phases", json::object());
  for (const auto& p : run_view.value("unmarked", json::array()))
    if (p.is_string() && phases.is_object() && phases.value(p.get<std::string>(), json()).is_null()) phases[p.get<std::string>()] = 0.0;
  if (attempts.size() < 2) return phases;
  json out = phases;
  for (const char* ph : {"startup", "install", "load_data", "start"}) out[ph] = attempts.front()["phases"][ph];
  json learn = phases.value("learn", json());
  for (size_t k = 0; k + 1 < attempts.size() && learn.is_number(); ++k) {
    const json& a = attempts[k];
    learn = a["learned_s"].is_number() && a["lost_s"].is_number()
                ? json(learn.get<double>() + a["learned_s"].get<double>() - a["lost_s"].get<double>())
                : json(nullptr);
  }
  out["learn"] = learn;
  return out;
}

std::optional<std::array<double, 8>> unfinished_phases(const json& run_view, std::optional<double> stopped_at_s) {
  if (!run_view.is_object()) return std::nullopt;
  const json phases = one_machine_phases(run_view);
  if (!phases.is_object()) return std::nullopt;
  std::array<double, 8> out{};
  double measured = 0;
  std::optional<size_t> open;  // the first phase not measured
  for (size_t i = 0; i < billing::kPhaseNames.size(); ++i) {
    const json& v = phases.value(std::string(billing::kPhaseNames[i]), json());
    if (v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= 0) {
      out[i] = v.get<double>();
      measured += out[i];
    } else if (!open) {
      open = i;
    }
  }
  if (!(measured > 0)) return std::nullopt;
  double up = 0;
  for (const auto& a : run_view.value("attempts", json::array()))
    if (a.is_object() && a.value("up_s", json()).is_number()) up += a["up_s"].get<double>();
  if (stopped_at_s && std::isfinite(*stopped_at_s) && *stopped_at_s > 0)
    up = std::max(up, *stopped_at_s + out[billing::kPoweroff]);
  // The open phase took what the machines were up beyond the phases measured; the poweroff it was stopped with is
  // measured already (the daemon's own mark), so nothing is counted twice.
  if (open && std::isfinite(up) && up > measured) out[*open] = up - measured;
  return out;
}

billing::SpotModel spot_model(const SpotExposure& seen, const RunConfig::SpotRecovery& recovery,
                              const std::string& provider, double on_demand_price, double prior_rate,
                              const std::vector<double>& restarts) {
  billing::SpotModel m;
  auto rate = billing::estimate_spot_rate(seen.interruptions, seen.machine_hours, prior_rate);
  m.rate_per_hour = rate.rate_per_hour;
  m.rate_basis = rate.basis;
  if (seen.attempts > 0)
    m.rate_basis += " (" + std::to_string(seen.attempts) + " spot attempt" + (seen.attempts == 1 ? "" : "s") + ")";
  m.checkpoint_every_s = recovery.checkpoint_every_s;
  m.max_interruptions = recovery.max_interruptions;
  m.on_demand_after = recovery.on_demand_after;
  m.on_demand_price = on_demand_price;
  m.free_first_hour = provider == "aws";
  if (restarts.empty()) {
    m.restart_basis = "no resumed attempt of this workload stored: its own startup, install, load_data and start";
  } else {
    double sum = 0;
    for (double r : restarts) sum += r;
    m.restart_s = sum / static_cast<double>(restarts.size());
    char buf[120];
    std::snprintf(buf, sizeof buf, "measured: mean of %zu resumed attempt%s of this workload", restarts.size(),
                  restarts.size() == 1 ? "" : "s");
    m.restart_basis = buf;
  }
  return m;
}

bool ran_cold(const nlohmann::json& run_view) {
  const auto metrics = run_view.value("metrics", nlohmann::json::object());
  auto method = [&](const char* key) {
    return metrics.contains(key) && metrics[key].is_object() ? metrics[key].value("method", "") : std::string();
  };
  const std::string installed = method("install"), loaded = method("data");
  return installed == "bundle" || installed == "pull" || loaded == "download";
}

std::string measured_config(const nlohmann::json& run_view) {
  const auto config = run_view.value("config", nlohmann::json::object());
  std::string out = config.value("provider", std::string()) + "/" + config.value("instance_type", std::string());
  if (config.contains("workload") && config["workload"].is_object())
    for (const auto& [field, value] : config["workload"].items())  // nlohmann keeps keys sorted
      out += " " + field + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
  return out;
}

}  // namespace tsum::daemon
