#include <doctest/doctest.h>

#include <sstream>

#include "daemon/store/export.h"

using namespace tsum::daemon;
using nlohmann::json;

namespace {

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t end; (end = s.find("\r\n", start)) != std::string::npos; start = end + 2)
    out.push_back(s.substr(start, end - start));
  return out;
}

json experiment() {
  json phases = {{"startup", 1.5}, {"install", 2.0}, {"load_data", 0.5}, {"start", 1.0},
                 {"learn", 10.0},  {"verify", 0.5},  {"save", 0.25},     {"poweroff", 0.25}};
  json done = {{"id", 7}, {"experiment_id", 3}, {"config_index", 1}, {"repetition", 2}, {"status", "done"},
               {"reason", ""}, {"config", {{"provider", "local"}, {"instance_type", "local-2c"}, {"workload", {{"optimizer", "adam"}}}}},
               {"phases", phases}, {"t_sum", 16.0}, {"nodes", 1}, {"hourly_price", 0.085},
               {"machine", {{"family", "local"}, {"vcpus", 2}, {"memory_gib", 4.0}}},
               {"metrics", {{"test_accuracy", 0.75}, {"images_per_s", 900.0},
                            {"install", {{"method", "bundle"},
                                         {"gpu_probe", {{"name", "NVIDIA H200"}, {"matmul_bf16_tflops", 650.5},
                                                        {"matmul_fp32_tflops", 48.0}, {"copy_gbps", 3900.0}}}}}}},
               {"cost", {{"per_hour", {{"billed_s", 3600.0}, {"amount", 0.085}, {"currency", "USD"}}}}},
               {"stats", {{"learn", {{"cpu_pct", {{"min", 90.0}, {"avg", 180.0}, {"max", 200.0}}}}}}}};
  json failed = {{"id", 8}, {"experiment_id", 3}, {"config_index", 0}, {"repetition", 1}, {"status", "failed"},
                 {"reason", "load_data failed: data, \"truncated\""},
                 {"config", {{"provider", "local"}, {"instance_type", "local-1c"}}},
                 {"phases", {{"startup", 1.0}}}, {"t_sum", nullptr}, {"metrics", json::object()},
                 {"cost", json::object()}};
  return {{"spec", {{"billing", {"per_hour"}},
                    {"configs", {{{"provider", "local"}, {"instance_type", "local-1c"}, {"runtime", "native"}},
                                 {{"provider", "local"}, {"instance_type", "local-2c"}, {"runtime", "native"}}}}}},
          {"runs", {done, failed}}};
}

}  // namespace

TEST_CASE("export: one row per run, with phases, t_sum, accuracy, cost per rule and resource min/avg/max") {
  auto cols = export_columns({"per_hour"});
  CHECK(cols.size() == 17 + 8 + 4 + 2 + 6 * 6 * 3 + 4);
  CHECK(cols.back() == "gpu_copy_gbps");
  auto rows = export_rows(experiment());
  REQUIRE(rows.size() == 2);
  CHECK(rows[0]["run_id"] == 7);
  CHECK(rows[0]["learn"] == 10.0);
  CHECK(rows[0]["t_sum"] == 16.0);
  CHECK(rows[0]["cost_per_hour"] == 0.085);
  CHECK(rows[0]["billed_s_per_hour"] == 3600.0);
  CHECK(rows[0]["learn_cpu_pct_avg"] == 180.0);
  CHECK(rows[0]["learn_rss_bytes_max"].is_null());
  CHECK(rows[1]["t_sum"].is_null());
  CHECK(rows[0]["workload"] == json{{"optimizer", "adam"}});  // the fields the experiment varies
  CHECK(rows[1]["workload"].is_null());
  CHECK(rows[0]["gpu_name"] == "NVIDIA H200");  // the install phase's GPU probe
  CHECK(rows[0]["gpu_matmul_bf16_tflops"] == 650.5);
  CHECK(rows[0]["gpu_copy_gbps"] == 3900.0);
  CHECK(rows[1]["gpu_name"].is_null());

  auto lines = split_lines(export_csv(experiment()));
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].rfind("run_id,experiment_id,config_index,config,provider,instance_type,family,cores,gpus,memory_gib,"
                       "nodes,price_per_hour,runtime,workload,repetition,status,reason,"
                       "startup,install,load_data,start,learn,verify,save,poweroff,t_sum,test_accuracy",
                       0) == 0);
  CHECK(lines[1].rfind("7,3,1,local/local-2c,local,local-2c,local,2,0,4.0,1,0.085,native,\"{\"\"optimizer\"\":\"\"adam\"\"}\",2,done,,1.5,2.0,0.5,1.0,10.0,0.5,0.25,0.25,16.0,0.75,900.0,USD,3600.0,0.085,",
                       0) == 0);
  // A reason with a comma and quotes is quoted, and missing values are empty cells.
  CHECK(lines[2].find(",failed,\"load_data failed: data, \"\"truncated\"\"\",1.0,,,") != std::string::npos);
  size_t commas = std::count(lines[0].begin(), lines[0].end(), ',');
  CHECK(std::count(lines[1].begin(), lines[1].end(), ',') == static_cast<long>(commas));
}

TEST_CASE("export: an inference or serving run adds a column per figure per level, the same in every row") {
  json e = experiment();
  e["runs"][0]["metrics"]["serving"] = json::parse(R"([
      {"mode": "concurrency", "concurrency": 1, "throughput_rps": 40.5, "p99_ms": 21.0, "stable": 1},
      {"mode": "concurrency", "concurrency": 4, "throughput_rps": 90.0, "p99_ms": null, "stable": 0}])");
  e["runs"][1]["metrics"]["serving"] = json::parse(R"([{"mode": "rate", "rate": 12.5, "throughput_rps": 12.4}])");
  auto rows = export_rows(e);
  CHECK(rows[0]["serve_c1_throughput_rps"] == 40.5);
  CHECK(rows[0]["serve_c4_p99_ms"].is_null());
  CHECK(rows[1]["serve_r12.5_throughput_rps"] == 12.4);
  auto lines = split_lines(export_csv(e));
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].find(",serve_c1_throughput_rps,serve_c1_images_per_s,") != std::string::npos);
  CHECK(lines[0].find(",serve_r12.5_throughput_rps,") != std::string::npos);
  const auto commas = std::count(lines[0].begin(), lines[0].end(), ',');
  CHECK(std::count(lines[1].begin(), lines[1].end(), ',') == commas);
  // (the other row's reason holds a quoted comma: one more in the text, the same cells)
  CHECK(std::count(lines[2].begin(), lines[2].end(), ',') == commas + 1);
  CHECK(lines[2].find(",12.4,") != std::string::npos);
  e["runs"][0]["metrics"]["inference"] = json::parse(R"([{"batch": 8, "images_per_s": 55.0, "p99_ms": 150.0}])");
  CHECK(export_rows(e)[0]["infer_b8_images_per_s"] == 55.0);
}
