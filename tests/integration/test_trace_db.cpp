// The trace provider replaying a tsum database (--trace-db): daemon A replays a CSV, daemon B replays A's
// database and must reproduce A's in-instance phases run for run; bad --trace-db inputs stop tsumd clearly.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <set>

#include "billing/prices/billing_rule.h"
#include "billing/measured_run.h"
#include "integration/daemon_process.h"

using namespace tsum;
using namespace tsum::testing;

namespace {

constexpr double kDbSpeed = 200;

constexpr const char* kDbTrace =
    "config,provider,instance_type,cores,gpus,price_per_hour,startup,install,load_data,start,learn,verify,save,"
    "poweroff\n"
    "aws/c6i.large,aws,c6i.large,2,0,0.085,40,30,12,4,310,6,3,20\n"
    "aws/c6i.large,aws,c6i.large,2,0,0.085,44,28,11,5,305.5,6,3,18\n"
    "aws/g4dn.xlarge,aws,g4dn.xlarge,4,1,0.526,42,95,12,9,61.25,2,3,20\n"
    "aws/g4dn.xlarge,aws,g4dn.xlarge,4,1,0.526,41,97,13,8,60.5,2,2,19\n";

const std::vector<std::string> kRules = {"per_second_60s_min", "per_hour"};

std::string experiment_body() {
  nlohmann::json body = {
      {"name", "replay"},
      {"workload", {{"model", "mnist_cnn"}, {"dataset", "fashion-mnist"}, {"epochs", 1}}},
      {"configs", {{{"provider", "trace"}, {"instance_type", "c6i.large"}},
                   {{"provider", "trace"}, {"instance_type", "g4dn.xlarge"}}}},
      {"repetitions", 2},
      {"billing", kRules}};
  return body.dump();
}

// Creates the experiment on d and waits for it to finish; returns its JSON.
nlohmann::json run_experiment(DaemonProcess& d, const std::string& admin) {
  auto created = d.call("POST", "/v1/experiments", admin, experiment_body());
  INFO(created.body);
  REQUIRE(created.status == 201);
  std::string path = "/v1/experiments/" + std::to_string(created.json()["id"].get<int64_t>());
  nlohmann::json exp;
  bool finished = eventually([&] {
    exp = d.call("GET", path, admin).json();
    return exp["status"] == "done" || exp["status"] == "failed";
  }, std::chrono::seconds(120));
  INFO(exp.dump(2));
  INFO(d.log());
  REQUIRE(finished);
  REQUIRE(exp["status"] == "done");
  return exp;
}

double phase(const nlohmann::json& run, int p) {
  return run["phases"][std::string(billing::kPhaseNames[p])].get<double>();
}

}  // namespace

TEST_CASE("trace-db: a daemon replaying another daemon's database reproduces its runs' in-instance phases") {
  TempDir dir;
  std::ofstream(dir.file("trace.csv")) << kDbTrace;

  // Daemon A replays the CSV; its database is what B replays.
  std::map<int64_t, nlohmann::json> recorded;  // A's runs by id
  {
    DaemonProcess a(dir.file("a.db"));
    std::string admin = a.admin_token();
    a.start({"--trace", dir.file("trace.csv"), "--trace-speed", std::to_string(kDbSpeed)});
    auto exp = run_experiment(a, admin);
    REQUIRE(exp["runs"].size() == 4);
    for (const auto& run : exp["runs"]) recorded[run["id"].get<int64_t>()] = run;
    REQUIRE(a.stop(SIGTERM));
  }

  DaemonProcess b(dir.file("b.db"));
  std::string admin = b.admin_token();
  b.start({"--trace-db", dir.file("a.db"), "--trace-speed", std::to_string(kDbSpeed), "--trace-billing", "per_hour"});

  // B offers A's machines with the cores and GPUs A's trace instances recorded, under B's billing rule.
  auto offers = b.call("GET", "/v1/offers", admin).json()["offers"];
  std::map<std::string, nlohmann::json> trace_offers;
  for (const auto& o : offers)
    if (o["provider"] == "trace") trace_offers[o["instance_type"]] = o;
  REQUIRE(trace_offers.size() == 2);
  CHECK(trace_offers["c6i.large"]["vcpus"] == 2);
  CHECK(trace_offers["g4dn.xlarge"]["gpus"] == 1);
  CHECK(trace_offers["g4dn.xlarge"]["hourly_price"].get<double>() == doctest::Approx(0.526));
  CHECK(trace_offers["c6i.large"]["billing_rule"] == "per_hour");

  auto exp = run_experiment(b, admin);
  REQUIRE(exp["runs"].size() == 4);
  std::set<int64_t> replayed;
  for (const auto& run : exp["runs"]) {
    REQUIRE(run["status"] == "done");
    int64_t source = run["instance"]["data"]["line"].get<int64_t>();  // the id of the run of A it replays
    replayed.insert(source);
    REQUIRE(recorded.count(source));
    const auto& original = recorded[source];
    CHECK(run["config"]["instance_type"] == original["config"]["instance_type"]);
    CHECK(run["hourly_price"].get<double>() == doctest::Approx(original["hourly_price"].get<double>()));
    for (int p = billing::kInstall; p <= billing::kSave; ++p) {
      INFO(billing::kPhaseNames[p] << " of A's run " << source);
      CHECK(phase(run, p) == doctest::Approx(phase(original, p)).epsilon(1e-9));
    }
    // startup and poweroff are B's own clock over A's (already compressed) times, compressed again.
    for (int p : {billing::kStartup, billing::kPoweroff}) {
      CHECK(phase(run, p) >= phase(original, p) / kDbSpeed - 0.01);
      CHECK(phase(run, p) <= phase(original, p) / kDbSpeed + 2.0);
    }
    // The bill under each of the experiment's rules is that rule applied to B's t_sum and A's price.
    double t_sum = run["t_sum"].get<double>();
    for (const auto& spec : kRules) {
      auto rule = billing::parse_rule(spec);
      REQUIRE(rule);
      CHECK(run["cost"][spec]["amount"].get<double>() ==
            doctest::Approx(billing::cost(*rule, run["hourly_price"].get<double>(), t_sum)));
    }
    CHECK(run["cost"]["per_hour"]["billed_s"].get<double>() == doctest::Approx(3600));  // t_sum is under an hour
    CHECK(run["cost"]["per_second_60s_min"]["billed_s"].get<double>() < 3600);
  }
  // Two repetitions of each config cycled through A's two runs of it: every recorded run was replayed once.
  std::set<int64_t> all;
  for (const auto& [id, _] : recorded) all.insert(id);
  CHECK(replayed == all);
}

TEST_CASE("trace-db: a missing file, a non-database, an unknown experiment or no done run stops tsumd serve") {
  TempDir dir;
  std::ofstream(dir.file("trace.csv")) << kDbTrace;
  std::string serve = std::string(TSUMD_BIN) + " serve --db " + dir.file("t.db") + " --listen 127.0.0.1:0 ";

  std::string out = run_capture(serve + "--trace-db " + dir.file("missing.db") + " 2>&1; echo rc=$?");
  CHECK(out.find("--trace-db " + dir.file("missing.db") + ": no such file") != std::string::npos);
  CHECK(out.find("rc=1") != std::string::npos);

  out = run_capture(serve + "--trace-db " + dir.file("trace.csv") + " 2>&1; echo rc=$?");
  CHECK(out.find("not a tsum database") != std::string::npos);
  CHECK(out.find("rc=1") != std::string::npos);

  // A database whose only experiment never finished a run: killed while its first run boots (very slowly).
  {
    DaemonProcess d(dir.file("queued.db"));
    std::string admin = d.admin_token();
    d.start({"--trace", dir.file("trace.csv"), "--trace-speed", "0.001"});
    auto created = d.call("POST", "/v1/experiments", admin, experiment_body());
    REQUIRE(created.status == 201);
    REQUIRE(d.stop(SIGKILL));
  }
  out = run_capture(serve + "--trace-db " + dir.file("queued.db") + " 2>&1; echo rc=$?");
  CHECK(out.find("4 runs in experiment 1, none done with all 8 phases measured") != std::string::npos);
  CHECK(out.find("rc=1") != std::string::npos);

  out = run_capture(serve + "--trace-db " + dir.file("queued.db") + " --trace-experiments 1,7 2>&1; echo rc=$?");
  CHECK(out.find("no experiment 7 in the database (it has 1)") != std::string::npos);
  CHECK(out.find("rc=1") != std::string::npos);

  out = run_capture(serve + "--trace " + dir.file("trace.csv") + " --trace-db " + dir.file("queued.db") +
                    " 2>&1; echo rc=$?");
  CHECK(out.find("exclude each other") != std::string::npos);
  CHECK(out.find("rc=2") != std::string::npos);

  out = run_capture(serve + "--trace-experiments 1 2>&1; echo rc=$?");
  CHECK(out.find("--trace-experiments needs --trace-db") != std::string::npos);
  CHECK(out.find("rc=2") != std::string::npos);

  out = run_capture(serve + "--trace-db " + dir.file("queued.db") + " --trace-experiments 1,x 2>&1; echo rc=$?");
  CHECK(out.find("--trace-experiments must be experiment ids") != std::string::npos);
  CHECK(out.find("rc=2") != std::string::npos);
}
