#include "daemon/store/export.h"

#include <algorithm>
#include <cstdio>

#include "daemon/runs/run_status.h"

namespace tsum::daemon {

using nlohmann::json;

namespace {

constexpr std::string_view kMetrics[] = {"cpu_pct", "rss_bytes", "read_bps", "write_bps", "gpu_util_pct",
                                         "gpu_mem_bytes"};
constexpr std::string_view kStats[] = {"min", "avg", "max"};

std::vector<std::string> rule_names(const json& experiment) {
  std::vector<std::string> out;
  const json spec = experiment.value("spec", json());  // null for an experiment stored unreadable: no rules
  if (!spec.is_object()) return out;
  for (const auto& r : spec.value("billing", json::array())) out.push_back(r.get<std::string>());
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

// Per level of an inference sweep (infer_b<batch>_...) or of a serving sweep (serve_c<concurrency>_... or
// serve_r<rate>_...): its figures, a column each, in the order the run measured them.
constexpr std::string_view kInferFields[] = {"images_per_s", "p50_ms", "p99_ms"};
constexpr std::string_view kServeColumns[] = {"throughput_rps", "images_per_s", "p50_ms", "p90_ms", "p95_ms", "p99_ms",
                                             "mean_ms", "network_ms", "queue_ms", "compute_ms", "batch_mean", "stable",
                                             "server_cpu_avg_pct"};

std::vector<std::pair<std::string, json>> level_cells(const json& metrics) {
  std::vector<std::pair<std::string, json>> out;
  for (const auto& e : metrics.value("inference", json::array())) {
    const std::string prefix = "infer_b" + e.value("batch", json()).dump() + "_";
    for (auto f : kInferFields) out.emplace_back(prefix + std::string(f), e.value(std::string(f), json()));
  }
  for (const auto& l : metrics.value("serving", json::array())) {
    char level[32];
    if (l.value("mode", "") == "rate") std::snprintf(level, sizeof level, "r%g", l.value("rate", 0.0));
    else std::snprintf(level, sizeof level, "c%lld", static_cast<long long>(l.value("concurrency", int64_t{0})));
    const std::string prefix = "serve_" + std::string(level) + "_";
    for (auto f : kServeColumns) out.emplace_back(prefix + std::string(f), l.value(std::string(f), json()));
  }
  return out;
}

}  // namespace

std::vector<std::string> export_columns(const std::vector<std::string>& rules) {
  // The machine's columns too (config to price_per_hour), so that the CSV is also `tsumd plan --from-csv`'s input.
  std::vector<std::string> cols = {"run_id", "experiment_id", "config_index", "config", "provider", "instance_type",
                                   "family", "cores", "gpus", "memory_gib", "nodes", "price_per_hour", "runtime",
                                   "workload", "repetition", "status", "reason"};
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
    const json machine = run.value("machine", json::object());
    const int nodes = run.value("nodes", 1);
    row["config"] = run["config"]["provider"].get<std::string>() + "/" +
                    run["config"]["instance_type"].get<std::string>() + (nodes > 1 ? "/x" + std::to_string(nodes) : "");
    row["family"] = machine.value("family", json());
    row["cores"] = machine.value("vcpus", 0);
    row["gpus"] = machine.value("gpus", 0);
    row["memory_gib"] = machine.value("memory_gib", json());
    row["nodes"] = nodes;
    row["price_per_hour"] = run.value("hourly_price", json());
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
    for (auto& [column, value] : level_cells(run["metrics"])) row[column] = std::move(value);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string export_csv(const json& experiment) {
  auto cols = export_columns(rule_names(experiment));
  // Then the level columns any run has, in the order the runs measured them.
  for (const auto& run : experiment["runs"])
    for (const auto& [column, _] : level_cells(run["metrics"]))
      if (std::find(cols.begin(), cols.end(), column) == cols.end()) cols.push_back(column);
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
