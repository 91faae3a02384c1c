// The trace provider through a real daemon: an experiment over recorded configs replays their CSV rows into the
// ledger, and the bill is computed from them; a malformed trace stops tsumd with the line at fault.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "billing/prices/billing_rule.h"
#include "billing/plan_csv.h"
#include "integration/daemon_process.h"

using namespace tsum;
using namespace tsum::testing;

namespace {

constexpr double kSpeed = 200;

// Two configs, three recorded runs each, with distinct phase times so each run can be told apart.
constexpr const char* kTrace =
    "config,provider,instance_type,cores,gpus,price_per_hour,startup,install,load_data,start,learn,verify,save,"
    "poweroff\n"
    "aws/c6i.large,aws,c6i.large,2,0,0.085,40,30,12,4,310,6,3,20\n"
    "aws/c6i.large,aws,c6i.large,2,0,0.085,44,28,11,5,305.5,6,3,18\n"
    "# a comment line\n"
    "aws/c6i.large,aws,c6i.large,2,0,0.085,38,33,12,4,320.25,7,2,22\n"
    "aws/c6i.2xlarge,aws,c6i.2xlarge,8,0,0.34,42,30,12,4,95,3,3,20\n"
    "aws/c6i.2xlarge,aws,c6i.2xlarge,8,0,0.34,41,29,13,4,97.75,3,3,19\n"
    "aws/c6i.2xlarge,aws,c6i.2xlarge,8,0,0.34,45,31,12,5,93,3,2,21\n";

std::string write_file(const TempDir& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir.file(name)) << text;
  return dir.file(name);
}

std::string trace_experiment() {
  nlohmann::json body = {
      {"name", "trace"},
      {"workload", {{"model", "mnist_cnn"}, {"dataset", "fashion-mnist"}, {"epochs", 1}}},
      {"configs", {{{"provider", "trace"}, {"instance_type", "c6i.large"}},
                   {{"provider", "trace"}, {"instance_type", "c6i.2xlarge"}}}},
      {"repetitions", 3},
      {"billing", {"per_second_60s_min", "per_minute", "per_hour"}}};
  return body.dump();
}

}  // namespace

TEST_CASE("trace: an experiment of 2 configs x 3 repetitions replays the CSV rows into the ledger and the bill") {
  TempDir dir;
  auto rows = billing::parse_runs_csv(kTrace);
  REQUIRE(rows);
  std::map<int, billing::CsvRun> by_line;
  for (const auto& r : *rows) by_line[r.line] = r;

  DaemonProcess d(dir.file("t.db"));
  std::string admin = d.admin_token();
  d.start({"--trace", write_file(dir, "trace.csv", kTrace), "--trace-speed", std::to_string(kSpeed)});

  auto created = d.call("POST", "/v1/experiments", admin, trace_experiment());
  INFO(created.body);
  REQUIRE(created.status == 201);
  int64_t id = created.json()["id"].get<int64_t>();

  nlohmann::json exp;
  bool finished = eventually([&] {
    exp = d.call("GET", "/v1/experiments/" + std::to_string(id), admin).json();
    return exp["status"] == "done" || exp["status"] == "failed";
  }, std::chrono::seconds(120));
  INFO(exp.dump(2));
  INFO(d.log());
  REQUIRE(finished);
  REQUIRE(exp["status"] == "done");
  REQUIRE(exp["runs"].size() == 6);

  std::set<int> lines_played;
  for (const auto& run : exp["runs"]) {
    REQUIRE(run["status"] == "done");
    int line = run["instance"]["data"]["line"].get<int>();
    lines_played.insert(line);
    REQUIRE(by_line.count(line));
    const auto& row = by_line[line];
    CHECK(run["config"]["instance_type"] == row.run.cfg.instance_type);
    CHECK(run["hourly_price"].get<double>() == doctest::Approx(row.price_per_hour));
    // The phases inside the instance are the recorded ones, exactly (mono_s carries them).
    for (int p = billing::kInstall; p <= billing::kSave; ++p) {
      std::string name(billing::kPhaseNames[p]);
      INFO(name << " of line " << line);
      CHECK(run["phases"][name].get<double>() == doctest::Approx(row.run.phases[p]).epsilon(1e-9));
    }
    // startup and poweroff are the daemon's own measurement of the compressed wait.
    for (int p : {billing::kStartup, billing::kPoweroff}) {
      double measured = run["phases"][std::string(billing::kPhaseNames[p])].get<double>();
      CHECK(measured >= row.run.phases[p] / kSpeed - 0.01);
      CHECK(measured <= row.run.phases[p] / kSpeed + 2.0);
    }
    double t_sum = run["t_sum"].get<double>();
    for (const char* spec : {"per_second_60s_min", "per_minute", "per_hour"}) {
      auto rule = billing::parse_rule(spec);
      REQUIRE(rule);
      const auto& c = run["cost"][spec];
      CHECK(c["billed_s"].get<double>() == doctest::Approx(billing::billed_seconds(*rule, t_sum)));
      CHECK(c["amount"].get<double>() == doctest::Approx(billing::cost(*rule, row.price_per_hour, t_sum)));
    }
  }
  // Three repetitions of each config cycled through its three rows: every row was played once.
  CHECK(lines_played == std::set<int>{2, 3, 5, 6, 7, 8});

  // A finished run's GET carries an ETag; sent back, it gets a 304 without a body; a stale one gets the run.
  const std::string path = "/v1/runs/" + std::to_string(exp["runs"][0]["id"].get<int64_t>());
  auto first = d.call("GET", path, admin);
  REQUIRE(first.status == 200);
  const std::string etag = first.header("ETag");
  REQUIRE(etag.size() == 18);
  CHECK(d.call("GET", path, admin).body == first.body);
  auto same = d.call("GET", path, admin, "", {{"If-None-Match", etag}});
  CHECK(same.status == 304);
  CHECK(same.body.empty());
  auto stale = d.call("GET", path, admin, "", {{"If-None-Match", "\"0000000000000000\""}});
  CHECK(stale.status == 200);
  CHECK(stale.json() == first.json());
  CHECK(d.call("GET", path, "", "", {{"If-None-Match", etag}}).status == 401);  // the ETag is no key
}

TEST_CASE("trace: a malformed CSV or speed stops tsumd serve with a message naming the problem") {
  TempDir dir;
  std::string bad = write_file(dir, "bad.csv",
                               "config,provider,instance_type,cores,gpus,price_per_hour,startup,install,load_data,"
                               "start,learn,verify,save,poweroff\n"
                               "a,aws,c6i.large,2,0,0.085,40,30,12,4,310,6,3,20\n"
                               "a,aws,c6i.large,2,0,0.085,40,30,twelve,4,310,6,3,20\n");
  std::string serve = std::string(TSUMD_BIN) + " serve --db " + dir.file("t.db") + " --listen 127.0.0.1:0 ";
  std::string out = run_capture(serve + "--trace " + bad + " 2>&1; echo rc=$?");
  CHECK(out.find("line 3") != std::string::npos);
  CHECK(out.find("bad.csv") != std::string::npos);
  CHECK(out.find("rc=1") != std::string::npos);

  std::string short_row = write_file(dir, "short.csv",
                                     "config,provider,instance_type,cores,gpus,price_per_hour,startup,install,"
                                     "load_data,start,learn,verify,save,poweroff\n\n"
                                     "a,aws,c6i.large,2,0,0.085,40,30\n");
  out = run_capture(serve + "--trace " + short_row + " 2>&1; echo rc=$?");
  CHECK(out.find("line 3") != std::string::npos);
  CHECK(out.find("rc=1") != std::string::npos);

  out = run_capture(serve + "--trace " + dir.file("missing.csv") + " 2>&1; echo rc=$?");
  CHECK(out.find("missing.csv") != std::string::npos);
  CHECK(out.find("rc=1") != std::string::npos);

  out = run_capture(serve + "--trace " + bad + " --trace-speed 0 2>&1; echo rc=$?");
  CHECK(out.find("--trace-speed") != std::string::npos);
  CHECK(out.find("rc=2") != std::string::npos);
}

TEST_CASE("trace: a row of N nodes is one instance standing for the cluster: its offer has all N machines") {
  TempDir dir;
  DaemonProcess d(dir.file("t.db"));
  std::string admin = d.admin_token();
  d.start({"--trace",
           write_file(dir, "trace.csv",
                      "config,provider,instance_type,cores,gpus,price_per_hour,startup,install,load_data,start,learn,"
                      "verify,save,poweroff,memory_gib,nodes,family\n"
                      "4xr3.2xlarge,trace,4xr3.2xlarge,8,0,2.66,0,115,30,10,700,0,10,0,61,4,r3\n"
                      "c4.large,trace,c4.large,2,0,0.10,0,115,30,10,9000,0,10,0,3.75,,c4\n")});
  auto offers = d.call("GET", "/v1/offers", admin);
  REQUIRE(offers.status == 200);
  std::map<std::string, nlohmann::json> trace;
  const nlohmann::json listed = offers.json()["offers"];
  for (const auto& o : listed)
    if (o["provider"] == "trace") trace[o["instance_type"].get<std::string>()] = o;
  INFO(offers.body);
  REQUIRE(trace.size() == 2);
  CHECK(trace["4xr3.2xlarge"]["vcpus"] == 32);
  CHECK(trace["4xr3.2xlarge"]["memory_gib"].get<double>() == doctest::Approx(244));
  CHECK(trace["4xr3.2xlarge"]["hourly_price"].get<double>() == doctest::Approx(2.66));  // the CSV's: all of them
  CHECK(trace["4xr3.2xlarge"]["note"].get<std::string>().find("a cluster of 4 machines") != std::string::npos);
  CHECK(trace["c4.large"]["vcpus"] == 2);
  CHECK(trace["c4.large"]["memory_gib"].get<double>() == doctest::Approx(3.75));
}

TEST_CASE("trace: a run's deadline holds on the recorded clock: the daemon's 6 h stops a 7 h run, the experiment's "
          "own deadline of a day lets it finish") {
  TempDir dir;
  DaemonProcess d(dir.file("t.db"));
  std::string admin = d.admin_token();
  // 7 recorded hours, 2.5 s of the daemon's at speed 10,000.
  d.start({"--trace",
           write_file(dir, "trace.csv",
                      "config,provider,instance_type,cores,gpus,price_per_hour,startup,install,load_data,start,learn,"
                      "verify,save,poweroff\n"
                      "long,trace,long,8,0,1.0,60,100,100,40,25000,100,100,30\n"),
           "--trace-speed", "10000"});
  auto run_of = [&](std::optional<int> deadline) {
    nlohmann::json body = {{"name", "long"},
                           {"workload", {{"model", "mnist_cnn"}, {"dataset", "fashion-mnist"}, {"epochs", 1}}},
                           {"configs", {{{"provider", "trace"}, {"instance_type", "long"}}}}};
    if (deadline) body["deadline"] = *deadline;
    const nlohmann::json exp = wait_experiment(d, admin, submit_experiment(d, admin, body), std::chrono::seconds(60));
    return d.call("GET", "/v1/runs/" + exp["runs"][0]["id"].dump(), admin).json();
  };
  const auto capped = run_of(std::nullopt);
  INFO(capped.dump(2));
  CHECK(capped["status"] == "failed");
  CHECK(capped["reason"] == "run exceeded its deadline of 21600 s");
  CHECK(capped["phases"]["start"].get<double>() == doctest::Approx(40));  // the phases before it are the recorded ones
  CHECK(capped["phases"]["learn"].is_null());                             // stopped in learn, as a machine would be
  CHECK(capped["attempts"][0]["up_s"].get<double>() < 60);                // on the daemon's clock: seconds, not hours
  const auto day = run_of(86400);
  INFO(day.dump(2));
  CHECK(day["status"] == "done");
  CHECK(day["phases"]["learn"].get<double>() == doctest::Approx(25000));
}
