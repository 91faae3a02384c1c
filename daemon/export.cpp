#include "daemon/export.h"

#include "daemon/run_status.h"

namespace tsum::daemon {

using nlohmann::json;

namespace {

constexpr std::string_view kMetrics[] = {"cpu_pct", "rss_bytes", "read_bps", "write_bps", "gpu_util_pct",
                                         "gpu_mem_bytes"};
constexpr std::string_view kStats[] = {"min", "avg", "max"};

std::vector<std::string> rule_names(const json& experiment) {
  std::vector<std::string> out;
  for (const auto& r : experiment["spec"].value("billing", json::array())) out.push_back(r.get<std::string>());
  return out;
}

std::string csv_cell(const json& v) {
  if (v.is_null()) return "";
  std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

constexpr std::string_view kProbeFields[] = {"name", "matmul_bf16_tflops", "matmul_fp32_tflops", "copy_gbps"};

}  // namespace

std::vector<std::string> export_columns(const std::vector<std::string>& rules) {
  std::vector<std::string> cols = {"run_id", "experiment_id", "config_index", "provider", "instance_type",
                                   "runtime", "workload", "repetition", "status", "reason"};
  for (auto p : kPhaseNames) cols.emplace_back(p);
  cols.insert(cols.end(), {"t_sum", "test_accuracy", "images_per_s", "currency"});
  for (const auto& r : rules) {
    cols.push_back("billed_s_" + r);
    cols.push_back("cost_" + r);
  }
  for (auto p : kPhaseNames)
    if (is_agent_phase(*parse_phase(p)))
      for (auto m : kMetrics)
        for (auto s : kStats) cols.push_back(std::string(p) + "_" + std::string(m) + "_" + std::string(s));
  // What the install phase's GPU probe measured (tsum-train probe-gpu), where the machine has a GPU.
  for (auto c : kProbeFields) cols.push_back("gpu_" + std::string(c));
  return cols;
}

json export_rows(const json& experiment) {
  auto rules = rule_names(experiment);
  json rows = json::array();
  for (const auto& run : experiment["runs"]) {
    json row = json::object();
    int idx = run.value("config_index", 0);
    row["run_id"] = run["id"];
    row["experiment_id"] = run["experiment_id"];
    row["config_index"] = idx;
    row["provider"] = run["config"]["provider"];
    row["instance_type"] = run["config"]["instance_type"];
    row["runtime"] = run["config"].value("runtime", "native");
    row["workload"] = run["config"].value("workload", json());  // the fields the experiment varies, as JSON
    row["repetition"] = run["repetition"];
    row["status"] = run["status"];
    row["reason"] = run["reason"];
    for (auto p : kPhaseNames) row[std::string(p)] = run["phases"].value(std::string(p), json());
    row["t_sum"] = run["t_sum"];
    row["test_accuracy"] = run["metrics"].value("test_accuracy", json());
    row["images_per_s"] = run["metrics"].value("images_per_s", json());
    row["currency"] = nullptr;
    for (const auto& r : rules) {
      json c = run["cost"].value(r, json());
      row["billed_s_" + r] = c.is_null() ? json() : c["billed_s"];
      row["cost_" + r] = c.is_null() ? json() : c["amount"];
      if (!c.is_null()) row["currency"] = c["currency"];
    }
    const json stats = run.value("stats", json::object());
    for (auto p : kPhaseNames) {
      if (!is_agent_phase(*parse_phase(p))) continue;
      const json ps = stats.value(std::string(p), json::object());
      for (auto m : kMetrics) {
        const json ms = ps.value(std::string(m), json::object());
        for (auto s : kStats)
          row[std::string(p) + "_" + std::string(m) + "_" + std::string(s)] = ms.value(std::string(s), json());
      }
    }
    const json probe = run["metrics"].value("install", json::object()).value("gpu_probe", json::object());
    for (auto c : kProbeFields) row["gpu_" + std::string(c)] = probe.value(std::string(c), json());
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string export_csv(const json& experiment) {
  auto cols = export_columns(rule_names(experiment));
  std::string out;
  for (size_t i = 0; i < cols.size(); ++i) out += (i ? "," : "") + cols[i];
  out += "\r\n";
  for (const auto& row : export_rows(experiment)) {
    for (size_t i = 0; i < cols.size(); ++i) out += (i ? "," : "") + csv_cell(row.value(cols[i], json()));
    out += "\r\n";
  }
  return out;
}

}  // namespace tsum::daemon
