// A tiny real experiment through the REST API: real tsum-train, real Fashion-MNIST, real SQLite, real HTTP.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <algorithm>
#include <map>
#include <regex>
#include <sstream>

#include "api/quickstart.h"
#include "billing/prices/billing_rule.h"
#include "integration/daemon_process.h"
#include "providers/local/process_group.h"

using namespace tsum;
using namespace tsum::testing;
using tsum::providers::local::group_has_live_member;
namespace fs = std::filesystem;

namespace {
// Every sample line is `name{labels} value`; histogram buckets are cumulative and end at +Inf == _count.
void check_prometheus_text(const std::string& text) {
  static const std::regex sample(R"(^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? -?[0-9.eE+-]+$)");
  std::istringstream in(text);
  std::map<std::string, double> last_bucket;
  for (std::string line; std::getline(in, line);) {
    CAPTURE(line);
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) continue;
    REQUIRE(std::regex_match(line, sample));
    auto b = line.find("_bucket{");
    if (b == std::string::npos) continue;
    std::string series = line.substr(0, line.find(",le=") == std::string::npos ? line.find("le=") : line.find(",le="));
    double v = std::stod(line.substr(line.rfind(' ') + 1));
    if (last_bucket.count(series)) CHECK(v >= last_bucket[series]);
    last_bucket[series] = v;
  }
  CHECK_FALSE(last_bucket.empty());
}
}  // namespace

TEST_CASE("a tiny experiment runs end to end: 8 phases, t_sum, accuracy, cost per rule, summary") {
  TempDir dir;
  DaemonProcess d(dir.file("t.db"));
  std::string admin = d.admin_token();
  d.start();

  auto created = d.call("POST", "/v1/experiments", admin, tiny_experiment(300, 200, {"local-1c", "local-2c"}));
  REQUIRE(created.status == 201);
  int64_t id = created.json()["id"].get<int64_t>();

  nlohmann::json exp;
  bool finished = eventually([&] {
    exp = d.call("GET", "/v1/experiments/" + std::to_string(id), admin).json();
    return exp["status"] == "done" || exp["status"] == "failed";
  }, std::chrono::seconds(240));
  INFO(exp.dump(2));
  INFO(d.log());
  REQUIRE(finished);
  REQUIRE(exp["status"] == "done");
  REQUIRE(exp["runs"].size() == 2);

  for (const auto& row : exp["runs"]) {  // a page's rows leave out epochs and statistics: the run's own view has them
    const nlohmann::json run = d.call("GET", "/v1/runs/" + std::to_string(row["id"].get<int64_t>()), admin).json();
    CHECK(run["status"] == "done");
    const auto& phases = run["phases"];
    REQUIRE(phases.size() == 8);
    double sum = 0;
    for (const char* p : {"startup", "install", "load_data", "start", "learn", "verify", "save", "poweroff"}) {
      CAPTURE(p);
      REQUIRE(phases[p].is_number());
      CHECK(phases[p].get<double>() >= 0);
      sum += phases[p].get<double>();
    }
    CHECK(phases["learn"].get<double>() > 0);
    // learn is the trainer's own training time (ready → learn_end), not some neighbouring phase's.
    REQUIRE(run["epochs"].size() == 1);
    double epoch_s = run["epochs"][0]["seconds"].get<double>();
    CHECK(phases["learn"].get<double>() >= epoch_s);
    CHECK(phases["learn"].get<double>() <= epoch_s + 0.5);
    double t_sum = run["t_sum"].get<double>();
    CHECK(std::fabs(sum - t_sum) <= 0.01 * t_sum);
    double acc = run["metrics"]["test_accuracy"].get<double>();
    CHECK(acc > 0.1);  // better than chance after 300 images
    CHECK(acc <= 1.0);
    double hourly = run["hourly_price"].get<double>();
    CHECK(hourly > 0);
    for (const char* name : {"per_second_60s_min", "per_minute", "per_10_minutes", "per_hour"}) {
      CAPTURE(name);
      auto rule = *billing::parse_rule(name);
      const auto& c = run["cost"][name];
      CHECK(c["billed_s"].get<double>() == doctest::Approx(billing::billed_seconds(rule, t_sum)));
      CHECK(c["amount"].get<double>() == doctest::Approx(hourly * c["billed_s"].get<double>() / 3600));
      CHECK(c["currency"] == "USD");
    }
    // Every inner phase carries the resource statistics the agent sampled inside the instance.
    for (const char* p : {"install", "load_data", "start", "learn", "verify", "save"}) {
      CAPTURE(p);
      const auto& st = run["stats"][p];
      REQUIRE(st.is_object());
      REQUIRE(st.contains("rss_bytes"));
      CHECK(st["rss_bytes"]["max"].get<double>() > 0);
      for (const auto& [metric, v] : st.items()) {
        CAPTURE(metric);
        double lo = v["min"].get<double>(), avg = v["avg"].get<double>(), hi = v["max"].get<double>();
        CHECK(lo <= avg * (1 + 1e-5) + 1e-9);
        CHECK(avg <= hi * (1 + 1e-5) + 1e-9);
      }
    }
    // Training uses the CPU (how much of it depends on what else the machine runs) and holds the data set and the
    // model in memory. This run learns for well under the 1 s sampling interval, so its learn phase may hold only the
    // samples the agent takes as it reads the marks; the first of them, start's end, is taken as the trainer reports
    // it has loaded the data (learn's begin follows at once), while the trainer is certainly alive.
    const auto& learn = run["stats"]["learn"];
    REQUIRE(learn.contains("cpu_pct"));
    CHECK(learn["cpu_pct"]["avg"].get<double>() > 0);
    CHECK(learn["cpu_pct"]["max"].get<double>() <= 100.0 * 2 + 20);  // at most the pinned cores, with jitter
    CHECK(std::max(run["stats"]["start"]["rss_bytes"]["max"].get<double>(), learn["rss_bytes"]["max"].get<double>()) >
          50e6);
    // load_data writes the decompressed data set into the sandbox.
    CHECK(run["stats"]["load_data"].contains("write_bps"));
    // The checkpoint outlives the instance (uploaded to the daemon in save); the sandbox does not.
    CHECK(d.call("GET", "/v1/runs/" + std::to_string(run["id"].get<int>()) + "/artifacts/model.pt", admin).body.size() >
          100000);
  }
  CHECK(fs::is_empty(dir.file("t.db.state/local")));
  // Under a 60 s minimum both cost one minute, so local-1c (half the price) is cheapest; per hour too.
  CHECK(exp["summary"]["cheapest"]["per_hour"]["config"]["instance_type"] == "local-1c");
  CHECK(exp["summary"]["cheapest"]["per_minute"]["config"]["instance_type"] == "local-1c");
  CHECK(exp["summary"]["fastest"]["config"].is_object());
  // The planner, from the runs just measured: under per_hour both bill one hour, so local-1c (half the price) wins.
  auto plan = d.call("GET", "/v1/plan?experiment=" + std::to_string(id) + "&objective=cost&billing=per_hour", admin);
  INFO(plan.body);
  REQUIRE(plan.status == 200);
  auto ranked = plan.json()["ranked"];
  REQUIRE(ranked.size() >= 2);
  CHECK(ranked[0]["config"] == "local/local-1c");
  CHECK(ranked[0]["billed_s"].get<double>() == doctest::Approx(3600));
  CHECK_FALSE(ranked[0]["reason"].get<std::string>().empty());
  CHECK(plan.json()["history_runs"] == 2);
  auto fastest = d.call("GET", "/v1/plan?experiment=" + std::to_string(id) + "&objective=time", admin).json();
  CHECK(fastest["ranked"][0]["t_sum"].get<double>() <= fastest["ranked"][1]["t_sum"].get<double>());
  CHECK(d.call("GET", "/v1/plan?experiment=" + std::to_string(id) + "&objective=cheapest", admin).status == 422);
  CHECK(d.call("GET", "/v1/plan?objective=cost", admin).status == 422);
  CHECK(d.call("GET", "/v1/plan?experiment=999", admin).status == 404);
  CHECK(d.call("GET", "/v1/plan?experiment=" + std::to_string(id) + "&objective=cost_under_deadline", admin).status ==
        422);  // needs a deadline

  // Metrics: Prometheus text, well formed, from the same numbers.
  auto metrics = d.call("GET", "/metrics", admin);
  REQUIRE(metrics.status == 200);
  check_prometheus_text(metrics.body);
  CHECK(metrics.body.find("tsum_runs{status=\"done\"} 2\n") != std::string::npos);
  CHECK(metrics.body.find("tsum_queue_depth 0\n") != std::string::npos);
  CHECK(metrics.body.find("tsum_phase_seconds_count{phase=\"learn\"} 2\n") != std::string::npos);
  // Each local run made two machines: its cache's warm-up, then its own.
  CHECK(metrics.body.find("tsum_provider_call_seconds_count{provider=\"local\",op=\"create\"} 4\n") !=
        std::string::npos);
  CHECK(metrics.body.find("tsum_spend_total{rule=\"per_hour\",currency=\"USD\"} ") != std::string::npos);
  CHECK(metrics.body.find("\ntsum_wal_checkpoints_total ") != std::string::npos);
  CHECK(metrics.body.find("\ntsum_wal_checkpoints_total 0\n") == std::string::npos);  // it ran while the runs did
  CHECK(metrics.body.find("\ntsum_wal_checkpoint_failures_total 0\n") != std::string::npos);
  CHECK(d.call("GET", "/metrics", "").status == 401);

  // The lists page: a page of one run, then the next by its cursor; the experiment's row counts and spends what
  // its runs did.
  auto first = d.call("GET", "/v1/runs?limit=1", admin).json();
  REQUIRE(first["runs"].size() == 1);
  CHECK(first["total"] == 2);
  REQUIRE(first["next_cursor"].is_string());
  auto second = d.call("GET", "/v1/runs?limit=1&cursor=" + first["next_cursor"].get<std::string>(), admin).json();
  REQUIRE(second["runs"].size() == 1);
  CHECK(second["runs"][0]["id"].get<int64_t>() > first["runs"][0]["id"].get<int64_t>());
  CHECK(second["next_cursor"].is_null());
  auto listed = d.call("GET", "/v1/experiments?order=desc", admin).json();
  REQUIRE(listed["experiments"].size() == 1);
  const auto& row = listed["experiments"][0];
  CHECK(row["progress"]["done"] == 2);
  CHECK(row["progress"]["by_status"]["done"] == 2);
  CHECK(row["spend"]["per_hour"]["runs"] == 2);
  CHECK(row["spend"]["per_hour"]["amount"].get<double>() ==
        doctest::Approx(exp["runs"][0]["cost"]["per_hour"]["amount"].get<double>() +
                        exp["runs"][1]["cost"]["per_hour"]["amount"].get<double>()));

  // Export: the same runs as CSV and JSON, and each run's resource samples over time.
  auto csv = d.call("GET", "/v1/experiments/" + std::to_string(id) + "/export?format=csv", admin);
  CHECK(csv.status == 200);
  CHECK(std::count(csv.body.begin(), csv.body.end(), '\n') == 3);  // header + 2 runs
  CHECK(csv.body.rfind("run_id,experiment_id,", 0) == 0);
  auto rows = d.call("GET", "/v1/experiments/" + std::to_string(id) + "/export", admin).json()["runs"];
  REQUIRE(rows.size() == 2);
  CHECK(rows[0]["t_sum"] == exp["runs"][0]["t_sum"]);
  CHECK(rows[0]["learn_cpu_pct_avg"].is_number());
  CHECK(d.call("GET", "/v1/experiments/" + std::to_string(id) + "/export?format=xml", admin).status == 422);
  auto samples = d.call("GET", "/v1/runs/1/samples.csv", admin);
  CHECK(samples.status == 200);
  CHECK(samples.body.rfind("mono_s,cpu_pct,rss_bytes,read_bps,write_bps,gpu_util_pct,gpu_mem_bytes\n", 0) == 0);
  CHECK(std::count(samples.body.begin(), samples.body.end(), '\n') >= 3);

  std::string table = api::format_table(exp);
  CHECK(table.find("local-1c") != std::string::npos);
  CHECK(table.find("cheapest under per_hour") != std::string::npos);

  // A replayed event can no longer touch a finished run, and the measured phases stay as they were.
  auto before = d.call("GET", "/v1/runs/1", admin).json()["phases"];
  auto replay = d.call("POST", "/v1/runs/1/events", admin, R"({"phase":"learn","mark":"begin","mono_s":0})");
  CHECK(replay.status == 409);
  CHECK(d.call("GET", "/v1/runs/1", admin).json()["phases"] == before);
  CHECK(d.call("DELETE", "/v1/runs/1", admin).status == 409);
}

TEST_CASE("cancel: DELETE terminates the instance and marks the run cancelled; a queued run is cancelled at once") {
  TempDir dir;
  DaemonProcess d(dir.file("t.db"), {"--max-concurrent", "1"});  // run 2 waits behind run 1
  std::string admin = d.admin_token();
  d.start();
  REQUIRE(d.call("POST", "/v1/experiments", admin, tiny_experiment(60000, 10000, {"local-1c", "local-1c"})).status == 201);
  REQUIRE(eventually([&] { return d.call("GET", "/v1/runs/1", admin).json()["status"] == "learning"; },
                     std::chrono::seconds(60)));
  auto pgid = d.call("GET", "/v1/runs/1", admin).json()["instance"]["data"]["pid"].get<int>();
  CHECK(d.call("DELETE", "/v1/runs/2", admin).status == 202);  // queued behind run 1
  CHECK(d.call("GET", "/v1/runs/2", admin).json()["status"] == "cancelled");
  CHECK(d.call("DELETE", "/v1/runs/1", admin).status == 202);
  REQUIRE(eventually([&] { return d.call("GET", "/v1/runs/1", admin).json()["status"] == "cancelled"; },
                     std::chrono::seconds(120)));
  auto run = d.call("GET", "/v1/runs/1", admin).json();
  CHECK(run["reason"] == "cancelled by user");
  CHECK(run["phases"]["poweroff"].get<double>() >= 0);
  CHECK(run["phases"]["learn"].is_null());  // never ended: no duration is made up
  CHECK(!group_has_live_member(pgid));              // the agent's whole process group is gone
  CHECK(d.call("GET", "/v1/experiments/1", admin).json()["status"] == "cancelled");
}

TEST_CASE("the quickstart table puts each phase under its own column") {
  nlohmann::json run = {
      {"config", {{"provider", "local"}, {"instance_type", "local-1c"}}},
      {"status", "done"},
      {"reason", ""},
      {"phases", {{"startup", 1.0}, {"install", 2.0}, {"load_data", 3.0}, {"start", 4.0}, {"learn", 5.0},
                  {"verify", 6.0}, {"save", 7.0}, {"poweroff", 8.0}}},
      {"t_sum", 36.0},
      {"metrics", {{"test_accuracy", 0.5}}},
      {"cost", {{"per_hour", {{"billed_s", 3600.0}, {"amount", 0.0425}, {"currency", "USD"}}}}}};
  nlohmann::json exp = {{"spec", {{"billing", {"per_hour"}}}},
                        {"runs", {run}},
                        {"summary", {{"cheapest", {{"per_hour", {{"config", run["config"]}, {"amount", 0.0425}}}}},
                                     {"fastest", {{"config", run["config"]}, {"mean_t_sum", 36.0}}}}}};
  std::string table = api::format_table(exp);
  INFO(table);
  auto header = table.find("startup");
  auto row = table.find("local-1c");
  REQUIRE(header != std::string::npos);
  REQUIRE(row != std::string::npos);
  std::istringstream cells(table.substr(row));
  std::string type, v;
  cells >> type;
  for (const char* want : {"1.000", "2.000", "3.000", "4.000", "5.000", "6.000", "7.000", "8.000", "36.000", "0.5000"}) {
    cells >> v;
    CHECK(v == want);
  }
  CHECK(table.find("$0.042500 (3600s)") != std::string::npos);
  CHECK(table.find("fastest:") != std::string::npos);
}
