// Adaptive search through a real daemon: every probe is a real run of the trace provider, the search stops
// within its probe budget, finds the known cheapest config, and is still there after a restart.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <tuple>

#include "billing/prices/billing_rule.h"
#include "daemon/store/db.h"
#include "integration/daemon_process.h"

using namespace tsum;
using namespace tsum::testing;

namespace {

// Learn scales with cores. With t-8c at 0.40/h, t-4c is the cheapest under a 60 s minimum:
// t-2c 865 s at 0.10/h = 0.024, t-4c 465 s at 0.12/h = 0.0155, t-8c 265 s at 0.40/h = 0.029.
// With t-8c at 0.20/h, t-8c is (0.0147), and the search must go past its first, exploring probe to find it.
std::string trace_csv(const std::string& price_8c) {
  return "config,provider,instance_type,cores,gpus,price_per_hour,startup,install,load_data,start,learn,verify,"
         "save,poweroff\n"
         "t-2c,trace,t-2c,2,0,0.10,10,20,10,5,800,5,5,10\n"
         "t-2c,trace,t-2c,2,0,0.10,10,21,10,5,810,5,5,10\n"
         "t-4c,trace,t-4c,4,0,0.12,10,20,10,5,400,5,5,10\n"
         "t-4c,trace,t-4c,4,0,0.12,10,19,10,5,405,5,5,10\n"
         "t-8c,trace,t-8c,8,0," + price_8c + ",10,20,10,5,200,5,5,10\n"
         "t-8c,trace,t-8c,8,0," + price_8c + ",10,20,10,5,203,5,5,10\n";
}
const std::string kSearchTrace = trace_csv("0.40");

nlohmann::json search_body(double probe_budget) {
  nlohmann::json candidates = nlohmann::json::array();
  for (const char* t : {"t-2c", "t-4c", "t-8c"}) candidates.push_back({{"provider", "trace"}, {"instance_type", t}});
  return {{"workload", {{"model", "mnist_cnn"}, {"dataset", "fashion-mnist"}, {"epochs", 1}}},
          {"candidates", candidates},
          {"objective", "cost"},
          {"probe_budget", probe_budget},
          {"future_runs", 100},
          {"billing", "per_second_60s_min"}};
}

// Posts the search and waits for it to end; returns GET /v1/searches/{id}.
nlohmann::json finished_search(DaemonProcess& d, const std::string& admin, const nlohmann::json& body) {
  auto created = d.call("POST", "/v1/searches", admin, body.dump());
  INFO(created.body);
  REQUIRE(created.status == 202);
  const std::string path = "/v1/searches/" + created.json()["id"].dump();
  nlohmann::json s;
  const bool finished = eventually([&] {
    s = d.call("GET", path, admin).json();
    return s["status"] != "running";
  }, std::chrono::seconds(120));
  INFO(s.dump(2));
  INFO(d.log());
  REQUIRE(finished);
  return s;
}

}  // namespace

namespace {

void search_finds_cheapest(const std::string& price_8c, const std::string& cheapest) {
  TempDir dir;
  std::ofstream(dir.file("trace.csv")) << trace_csv(price_8c);
  DaemonProcess d(dir.file("t.db"));
  std::string admin = d.admin_token();
  const std::vector<std::string> flags = {"--trace", dir.file("trace.csv"), "--trace-speed", "200"};
  d.start(flags);

  const double budget = 0.05;
  const nlohmann::json s = finished_search(d, admin, search_body(budget));
  const int64_t id = s["id"].get<int64_t>();
  const std::string path = "/v1/searches/" + std::to_string(id);
  INFO(s.dump(2));
  REQUIRE(s["status"] == "done");
  CHECK(s["recommendation"]["config"] == cheapest);
  bool probed_cheapest = false;
  for (const auto& step : s["trace"]) probed_cheapest = probed_cheapest || step["config"] == cheapest;
  CHECK(probed_cheapest);
  CHECK(s["recommendation"]["measured"] == true);  // it ran what it recommends
  CHECK(s["recommendation"]["why"] == "measured");
  CHECK(s["model_check"]["explains"] == true);
  CHECK(s["spent"].get<double>() <= budget);
  REQUIRE(s["trace"].size() >= 1);
  REQUIRE(s["probes"].size() == s["trace"].size());
  CHECK(!s["stop_reason"].get<std::string>().empty());

  // Every probe was a real run whose measured t_sum and cost are those the ledger shows.
  double spent = 0;
  for (size_t i = 0; i < s["trace"].size(); ++i) {
    const auto& step = s["trace"][i];
    const auto& probe = s["probes"][i];
    CHECK(!step["why"].get<std::string>().empty());
    CHECK(step["config"] == probe["config"]);
    auto run = d.call("GET", "/v1/runs/" + std::to_string(probe["run_id"].get<int64_t>()), admin).json();
    REQUIRE(run["status"] == "done");
    CHECK(run["t_sum"].get<double>() == doctest::Approx(step["t_sum"].get<double>()));
    CHECK(run["cost"]["per_second_60s_min"]["amount"].get<double>() ==
          doctest::Approx(step["probe_cost"].get<double>()));
    spent += run["cost"]["per_second_60s_min"]["amount"].get<double>();
    // The probe's experiment and run name their search, so their pages can show it.
    CHECK(run["search_id"] == id);
    auto exp = d.call("GET", "/v1/experiments/" + std::to_string(probe["experiment_id"].get<int64_t>()), admin).json();
    CHECK(exp["search_id"] == id);
    CHECK(exp["schedule_id"].is_null());
  }
  // One round before each probe and one after the last; from nothing measured the first has no band, every
  // later one a band for every candidate.
  REQUIRE(s["rounds"].size() == s["trace"].size() + 1);
  CHECK(s["rounds"][0]["bands"].empty());
  for (size_t k = 1; k < s["rounds"].size(); ++k) {
    const auto& round = s["rounds"][k];
    CHECK(round["bands"].size() == 3);
    for (const auto& b : round["bands"])
      CHECK((b["p10"].get<double>() <= b["mean"].get<double>() && b["mean"].get<double>() <= b["p90"].get<double>() * 1.0001));
  }
  CHECK(!s.contains("next"));  // only while running
  CHECK(spent <= budget);

  // Persisted: a restarted daemon reports the same search.
  d.stop(SIGTERM);
  d.start(flags);
  auto again = d.call("GET", path, admin).json();
  CHECK(again["status"] == "done");
  CHECK(again["recommendation"] == s["recommendation"]);
  CHECK(again["trace"] == s["trace"]);
}

}  // namespace

TEST_CASE("search: probes the trace's configs as real runs, stays within its budget, finds the cheapest") {
  search_finds_cheapest("0.40", "trace/t-4c");
}

TEST_CASE("search: past its exploring probe, it follows the expected gain to the cheapest config") {
  search_finds_cheapest("0.20", "trace/t-8c");
}

namespace {

// A trace where t-2c learns 60 s, t-4c 4 s and t-8c 2 s (every other phase 1 s), each time x `scale`, at 0.9, 3.6
// and 20 per hour: the daemon is started on it at `speed`, searched under step:1,min:1 with 100 planned runs, and
// the finished search returned. t-2c's probe can no longer win partway through its learning.
nlohmann::json search_that_stops_t2c(DaemonProcess& d, const std::string& admin, const TempDir& dir, int scale,
                                     const std::string& speed) {
  std::ofstream csv(dir.file("trace.csv"));
  csv << "config,provider,instance_type,cores,gpus,price_per_hour,startup,install,load_data,start,learn,verify,"
         "save,poweroff\n";
  for (auto [type, cores, price, learn] : {std::tuple{"t-2c", 2, "0.9", 60}, {"t-4c", 4, "3.6", 4}, {"t-8c", 8, "20", 2}}) {
    const std::string s = std::to_string(scale);
    csv << type << ",trace," << type << "," << cores << ",0," << price << "," << s << "," << s << "," << s << "," << s
        << "," << learn * scale << "," << s << "," << s << "," << s << "\n";
  }
  csv.close();
  d.start({"--trace", dir.file("trace.csv"), "--trace-speed", speed});
  nlohmann::json body = {{"workload", {{"model", "mnist_cnn"}, {"dataset", "fashion-mnist"}, {"epochs", 1}}},
                         {"candidates", nlohmann::json::array()},
                         {"objective", "cost"},
                         {"future_runs", 100},
                         {"billing", "step:1,min:1"}};
  for (const char* t : {"t-2c", "t-4c", "t-8c"}) body["candidates"].push_back({{"provider", "trace"}, {"instance_type", t}});
  return finished_search(d, admin, body);
}

}  // namespace

TEST_CASE("search: a probe stopped at its limit while learning is billed for its machine's up time, and what it "
          "learned bounds its config") {
  // t-4c is probed first (the group's second smallest) and measured: 12 s at 3.6/h. t-2c then looks cheaper by the
  // cores it would use, but learns for 60 s: at 0.9/h it could no longer win past 48 s, so its probe run gets a
  // deadline (less the trace provider's usual poweroff) and is stopped while learning. Speed 1: the deadline is on
  // the daemon's clock, as the recorded phases are.
  TempDir dir;
  DaemonProcess d(dir.file("t.db"));
  std::string admin = d.admin_token();
  const nlohmann::json s = search_that_stops_t2c(d, admin, dir, 1, "1");
  INFO(s.dump(2));
  REQUIRE(s["status"] == "done");
  const auto rule = billing::parse_rule("step:1,min:1");
  REQUIRE(rule);
  double spent = 0;
  int stopped = 0;
  for (size_t i = 0; i < s["trace"].size(); ++i) {
    const auto& step = s["trace"][i];
    auto run = d.call("GET", "/v1/runs/" + std::to_string(s["probes"][i]["run_id"].get<int64_t>()), admin).json();
    spent += step["probe_cost"].get<double>();
    if (run["status"] == "done") continue;
    ++stopped;
    CHECK(step["config"] == "trace/t-2c");
    CHECK(run["reason"].get<std::string>().find("deadline") != std::string::npos);
    CHECK(run["phases"]["learn"].is_null());  // the ledger measured no learn phase: it never ended
    // The search counts what the machine was up, as the provider bills it, not only the phases that ended...
    const double up = run["attempts"][0]["up_s"].get<double>();
    CHECK(step["t_sum"].get<double>() == doctest::Approx(up));
    CHECK(step["probe_cost"].get<double>() == doctest::Approx(billing::cost(*rule, 0.9, up)));
    // ...and the seconds it learned (its up time past the 4 s of setup and its poweroff) are more than setup alone.
    CHECK(up > 6);
  }
  CHECK(stopped == 1);
  CHECK(s["spent"].get<double>() == doctest::Approx(spent));
}

TEST_CASE("search: a replay at --trace-speed 1000 stops a probe at its limit on the recorded clock, and bills it so") {
  // The case above with every recorded second x100, replayed 1000x faster than recorded: t-2c's probe would run
  // 6,800 recorded seconds (6.8 s of the daemon's); it is stopped where it can no longer win, near 4,800. The
  // daemon's own clock would stop it only after 4,800 of its seconds, so the stand-in keeps the deadline on the
  // recorded clock (LaunchSpec::deadline_s) and the probe is billed for the recorded seconds it was up.
  TempDir dir;
  DaemonProcess d(dir.file("t.db"));
  std::string admin = d.admin_token();
  const nlohmann::json s = search_that_stops_t2c(d, admin, dir, 100, "1000");
  INFO(s.dump(2));
  REQUIRE(s["status"] == "done");
  double spent = 0;
  int stopped = 0;
  for (size_t i = 0; i < s["trace"].size(); ++i) {
    const auto& step = s["trace"][i];
    auto run = d.call("GET", "/v1/runs/" + std::to_string(s["probes"][i]["run_id"].get<int64_t>()), admin).json();
    INFO(run.dump(2));
    spent += step["probe_cost"].get<double>();
    if (run["status"] == "done") continue;
    ++stopped;
    CHECK(step["config"] == "trace/t-2c");
    const auto experiment = d.call("GET", "/v1/experiments/" + run["experiment_id"].dump(), admin).json();
    const double deadline = experiment["spec"]["deadline"].get<double>();
    CHECK(run["reason"] == "run exceeded its deadline of " + std::to_string(std::lround(deadline)) + " s");
    CHECK(run["phases"]["learn"].is_null());
    // Stopped at its limit, set aside for its poweroff, not run whole (6,800 recorded seconds)...
    const double limit = step["limit_s"].get<double>();
    CHECK(deadline <= limit);
    CHECK(deadline > limit - 60);
    // ...and billed for the recorded seconds up to its deadline plus its poweroff, far more than the daemon's clock
    // saw pass (a thousandth of them).
    const double t_sum = step["t_sum"].get<double>();
    CHECK(t_sum >= deadline);
    CHECK(t_sum < deadline + 60);
    CHECK(run["attempts"][0]["up_s"].get<double>() < t_sum / 20);
  }
  CHECK(stopped == 1);
  CHECK(s["spent"].get<double>() == doctest::Approx(spent));
}

TEST_CASE("search: bad requests are refused with the reason, unknown searches are 404, and without a probe_budget "
          "the default budget applies") {
  TempDir dir;
  std::ofstream(dir.file("trace.csv")) << kSearchTrace;
  DaemonProcess d(dir.file("t.db"));
  std::string admin = d.admin_token();
  d.start({"--trace", dir.file("trace.csv"), "--trace-speed", "200"});

  auto unknown_type = search_body(1);
  unknown_type["candidates"][0]["instance_type"] = "t-64c";
  auto r = d.call("POST", "/v1/searches", admin, unknown_type.dump());
  CHECK(r.status == 422);
  CHECK(r.body.find("t-64c") != std::string::npos);

  auto bad_share = search_body(1);
  bad_share["budget_share"] = -0.1;
  r = d.call("POST", "/v1/searches", admin, bad_share.dump());
  CHECK(r.status == 422);
  CHECK(r.body.find("budget_share") != std::string::npos);

  auto bad_objective = search_body(1);
  bad_objective["objective"] = "cheapest";
  CHECK(d.call("POST", "/v1/searches", admin, bad_objective.dump()).status == 422);
  CHECK(d.call("POST", "/v1/searches", admin, "{not json").status == 400);
  CHECK(d.call("POST", "/v1/searches", "", search_body(1).dump()).status == 401);
  CHECK(d.call("GET", "/v1/searches/999", admin).status == 404);

  // Without a probe_budget, the default budget: 10% of the planned runs at the first measured config.
  auto body = search_body(0);
  body.erase("probe_budget");
  body["future_runs"] = 3;  // 10% of 3 runs: less than one more probe
  const nlohmann::json s = finished_search(d, admin, body);
  INFO(s.dump(2));
  REQUIRE(s["status"] == "done");
  REQUIRE(s["trace"].size() >= 1);
  // The budget: the first probe, plus 10% of 3 runs at the first measured config's cost (the only one here).
  const double first = s["trace"][0]["probe_cost"].get<double>();
  const double best = s["recommendation"]["cost"].get<double>();
  CHECK(s["budget"].get<double>() == doctest::Approx(first + 0.1 * 3 * best).epsilon(0.02));
  CHECK(s["spent"].get<double>() <= s["budget"].get<double>() + 1e-12);
  CHECK(s["trace"].size() == 1);
  const std::string why = s["stop_reason"];
  CHECK((why.find("the exploration budget is spent") == 0 || why.find("no probe is worth its cost") == 0));
  CHECK(s["expected_saving"].is_number());
  CHECK(s["recommendation"]["measured"] == true);

  // The list pages: the finished search, then a second one, a page of one each, newest first.
  const nlohmann::json second = finished_search(d, admin, search_body(1));
  auto first_page = d.call("GET", "/v1/searches?limit=1&order=desc", admin).json();
  CHECK(first_page["total"] == 2);
  REQUIRE(first_page["searches"].size() == 1);
  CHECK(first_page["searches"][0]["id"] == second["id"]);
  REQUIRE(first_page["next_cursor"].is_string());
  auto last_page = d.call("GET", "/v1/searches?limit=1&order=desc&cursor=" +
                                     first_page["next_cursor"].get<std::string>(), admin).json();
  REQUIRE(last_page["searches"].size() == 1);
  CHECK(last_page["searches"][0]["id"] == s["id"]);
  CHECK(last_page["searches"][0]["probes"] == s["trace"].size());
  CHECK(last_page["next_cursor"].is_null());
  CHECK(d.call("GET", "/v1/searches?status=done", admin).status == 422);  // no such filter
}

TEST_CASE("search: numbers at their limits: a probe_budget of 1e9 (no limit) ends, and out of range is a 422 "
          "naming the field and its range") {
  TempDir dir;
  std::ofstream(dir.file("trace.csv")) << kSearchTrace;
  DaemonProcess d(dir.file("t.db"));
  std::string admin = d.admin_token();
  d.start({"--trace", dir.file("trace.csv"), "--trace-speed", "200"});

  const auto refused = [&](const char* field, const nlohmann::json& value, const std::string& range) {
    auto body = search_body(1);
    body[field] = value;
    auto r = d.call("POST", "/v1/searches", admin, body.dump());
    INFO(field << " = " << value.dump() << ": " << r.body);
    CHECK(r.status == 422);
    CHECK(r.json()["detail"].get<std::string>().find(std::string("'") + field + "' must be " + range) !=
          std::string::npos);
  };
  refused("probe_budget", 1e10, "a number from 0 to 1e+09");
  refused("probe_budget", -1, "a number from 0 to 1e+09");
  refused("max_probes", 2147483648.0, "an integer from 0 to 1000");
  refused("max_probes", 2.5, "an integer from 0 to 1000");
  refused("future_runs", 1e308, "a number from 0 to 1e+06");
  refused("confidence", 1.5, "a number from 0 to 1");
  refused("deadline_s", 0, "a number from 1 to 2.592e+06");
  refused("tolerance", "0.1", "a number from 0 to 10");
  auto extra = search_body(1);
  extra["colour"] = 1;
  auto r = d.call("POST", "/v1/searches", admin, extra.dump());
  CHECK(r.status == 422);
  CHECK(r.json()["detail"] == "search: unknown field 'colour'");

  // A user's "no limit": the probes' deadline is clamped to what a run may have, every probe runs, and the
  // search ends; the runs it made stay readable.
  const nlohmann::json s = finished_search(d, admin, search_body(1e9));
  INFO(s.dump(2));
  CHECK(s["status"] == "done");
  CHECK(s["trace"].size() >= 1);
  auto runs = d.call("GET", "/v1/runs", admin);
  REQUIRE(runs.status == 200);
  CHECK(runs.json()["runs"].size() == s["trace"].size());
  auto listed = d.call("GET", "/v1/searches", admin);  // in brief, newest first
  REQUIRE(listed.status == 200);
  REQUIRE(listed.json()["searches"].size() == 1);
  CHECK(listed.json()["searches"][0]["id"] == s["id"]);
  CHECK(listed.json()["searches"][0]["status"] == "done");
  CHECK(listed.json()["searches"][0]["probes"] == s["trace"].size());
  CHECK(listed.json()["searches"][0]["recommendation"] == s["recommendation"]["config"]);
  for (const auto& run : runs.json()["runs"]) {
    CHECK(run["status"] == "done");
    CHECK(!run.contains("error"));
  }
}

TEST_CASE("a stored experiment that no longer parses is listed, marked with its error, and its queued run fails "
          "once, with the reason") {
  TempDir dir;
  std::ofstream(dir.file("trace.csv")) << kSearchTrace;
  DaemonProcess d(dir.file("t.db"));
  std::string admin = d.admin_token();
  const std::vector<std::string> flags = {"--trace", dir.file("trace.csv"), "--trace-speed", "200"};
  d.start(flags);
  d.stop(SIGTERM);
  {  // As an older version (or a bug) could have left it: a deadline out of today's range, and a queued run.
    auto db = daemon::Db::open(dir.file("t.db"));
    REQUIRE(db.ok());
    const nlohmann::json spec = {{"name", "old"}, {"workload", {{"model", "mnist_cnn"}, {"epochs", 1}}},
                                 {"configs", {{{"provider", "trace"}, {"instance_type", "t-2c"}}}},
                                 {"repetitions", 1}, {"deadline", 1073741783}};
    auto st = (*db)->exec("INSERT INTO experiments (name, spec, created_at) VALUES ('old', '" + spec.dump() +
                          "', 1); INSERT INTO runs (experiment_id, config_index, repetition, provider, "
                          "instance_type, hourly_price, currency, status, created_at, updated_at, nodes, machine, "
                          "market) VALUES (1, 0, 1, 'trace', 't-2c', 0.1, 'USD', 'queued', 1, 1, 1, '{}', "
                          "'on-demand')");
    REQUIRE_MESSAGE(st.ok(), st.error().detail);
  }
  d.start(flags);
  nlohmann::json run;
  const bool failed = eventually([&] {
    auto r = d.call("GET", "/v1/runs", admin);
    if (r.status != 200 || r.json()["runs"].size() != 1) return false;
    run = r.json()["runs"][0];
    return run["status"] == "failed";
  }, std::chrono::seconds(60));
  INFO(run.dump(2));
  REQUIRE(failed);
  CHECK(run["error"].get<std::string>().find("'deadline' must be between 1 and 2592000") != std::string::npos);
  CHECK(run["reason"].get<std::string>().rfind("not admitted: ", 0) == 0);
  auto one = d.call("GET", "/v1/runs/1", admin);
  CHECK(one.status == 200);
  auto exps = d.call("GET", "/v1/experiments", admin);
  REQUIRE(exps.status == 200);
  CHECK(exps.json()["experiments"][0]["spec"].is_null());
  CHECK(exps.json()["experiments"][0].contains("error"));
  CHECK(d.call("GET", "/v1/experiments/1", admin).status == 200);
  CHECK(d.call("GET", "/v1/plan?experiment=1", admin).status == 422);  // named, not a 500
  CHECK(d.call("GET", "/v1/experiments/1/export", admin).status == 200);
  CHECK(d.call("DELETE", "/v1/experiments/1", admin).status == 202);
  // Failed once: the log says so once, not at every dispatch.
  const std::string log = d.log();
  size_t mentions = 0;
  for (size_t at = log.find("run 1"); at != std::string::npos; at = log.find("run 1", at + 1)) ++mentions;
  CHECK(mentions <= 2);
}
