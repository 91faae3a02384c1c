#include <doctest/doctest.h>

#include "daemon/fixture.h"
#include "daemon/views/experiment_summary.h"
#include "daemon/views/views.h"

using namespace tsum;
using namespace tsum::daemon;
using nlohmann::json;

using tsum::testing::DaemonFixture;

namespace {
// Writes all eight phases for a run so that t_sum = sum(secs).
void finish_run(DaemonFixture& f, int64_t run, const std::array<double, 8>& secs) {
  double t = 1000;
  for (size_t i = 0; i < 8; ++i) {
    auto p = static_cast<Phase>(i);
    auto clock = is_agent_phase(p) ? ClockDomain::agent : ClockDomain::daemon;
    REQUIRE(f.ledger.record_mark(run, p, Mark::begin, t, clock).ok());
    REQUIRE(f.ledger.record_mark(run, p, Mark::end, t + secs[i], clock,
                                 p == Phase::verify ? json{{"test_accuracy", 0.8}} : json::object()).ok());
    t += secs[i] + 1;
  }
  REQUIRE(f.ledger.advance(run, RunStatus::terminating, "").ok());
  REQUIRE(f.ledger.advance(run, RunStatus::done, "").ok());
}
}  // namespace

TEST_CASE("a finished run shows 8 phases, t_sum as their sum, accuracy and cost per rule") {
  DaemonFixture f;
  finish_run(f, 1, {5, 1, 2, 3, 40, 4, 1, 2.5});
  Views v(f.store, f.ledger);
  auto r = v.run(1);
  REQUIRE(r.ok());
  CHECK((*r)["status"] == "done");
  CHECK((*r)["phases"].size() == 8);
  CHECK((*r)["t_sum"].get<double>() == doctest::Approx(58.5));
  CHECK((*r)["metrics"]["test_accuracy"] == 0.8);
  CHECK((*r)["cost"]["per_second_60s_min"]["billed_s"] == 60);
  CHECK((*r)["cost"]["per_hour"]["billed_s"] == 3600);
  CHECK((*r)["cost"]["per_hour"]["amount"].get<double>() == doctest::Approx(0.085));
  CHECK((*r)["cost"]["per_minute"]["currency"] == "USD");

  auto unfinished = v.run(2);
  REQUIRE(unfinished.ok());
  CHECK((*unfinished)["t_sum"].is_null());
  CHECK((*unfinished)["cost"].empty());
  CHECK(v.run(77).code() == Code::not_found);
}

TEST_CASE("a failed run shows what its machine's up-time billed, marked partial; its untimed phases stay null") {
  DaemonFixture f;
  REQUIRE(f.ledger.begin_attempt(2, {"local", "local-2c", "on-demand", 0.085}).ok());  // as dispatch writes it
  double t = 1000;
  for (auto p : {Phase::startup, Phase::install}) {  // up 30 s, failed in install
    auto clock = is_agent_phase(p) ? ClockDomain::agent : ClockDomain::daemon;
    REQUIRE(f.ledger.record_mark(2, p, Mark::begin, t, clock).ok());
    REQUIRE(f.ledger.record_mark(2, p, Mark::end, t + 10, clock).ok());
    t += 10;
  }
  REQUIRE(f.ledger.record_mark(2, Phase::poweroff, Mark::begin, t, ClockDomain::daemon).ok());
  REQUIRE(f.ledger.record_mark(2, Phase::poweroff, Mark::end, t + 10, ClockDomain::daemon).ok());
  REQUIRE(f.ledger.advance(2, RunStatus::terminating, "install failed").ok());
  REQUIRE(f.ledger.advance(2, RunStatus::failed, "install failed").ok());
  Views v(f.store, f.ledger);
  auto r = v.run(2);
  REQUIRE(r.ok());
  INFO(r->dump(2));
  CHECK((*r)["status"] == "failed");
  CHECK((*r)["t_sum"].is_null());
  CHECK((*r)["phases"]["learn"].is_null());
  REQUIRE((*r)["cost"].contains("per_hour"));
  CHECK((*r)["cost"]["per_hour"]["billed_s"] == 3600);
  CHECK((*r)["cost"]["per_hour"]["amount"].get<double>() > 0);
  CHECK((*r)["cost"]["per_hour"]["amount"] == (*r)["attempts"][0]["cost"]["per_hour"]["amount"]);
  CHECK((*r)["cost"]["per_hour"]["partial"] == true);
}

TEST_CASE("a job's phases that took no time of their own are unmarked, not 0 s; each phase and epoch at the daemon's time") {
  DaemonFixture f;
  REQUIRE(f.ledger.begin_attempt(2, {"local", "local-2c", "on-demand", 0.085}).ok());
  const double created = f.clock.now_s();
  REQUIRE(f.ledger.record_mark(2, Phase::startup, Mark::begin, created, ClockDomain::daemon).ok());
  REQUIRE(f.ledger.advance(2, RunStatus::booting, "instance created").ok());
  // The agent's marks on the machine's clock (its uptime, from 500 s), each arriving some time after it was made:
  // the install begin 2 s late (it is the first sign of life), the rest 0.25 s late but one, held 30 s in a spool.
  auto event = [&](Phase p, AgentEvent::Kind k, double mono, double late, json attrs = json::object()) {
    f.clock.set(created + 10 + (mono - 500) + late);
    AgentEvent ev;
    ev.phase = p;
    ev.kind = k;
    ev.mono_s = mono;
    ev.attrs = std::move(attrs);
    REQUIRE(f.ledger.apply_agent_event(2, ev).ok());
  };
  using K = AgentEvent::Kind;
  const json derived = {{"derived", true}};
  event(Phase::install, K::begin, 500, 2);
  event(Phase::install, K::end, 501, 0.25);
  event(Phase::load_data, K::begin, 501, 0.25);
  event(Phase::load_data, K::end, 502, 0.25);
  event(Phase::start, K::begin, 502, 0.25);
  event(Phase::start, K::end, 502, 0.25, derived);  // unmarked: learn is the whole command
  event(Phase::learn, K::begin, 502, 0.25, derived);
  event(Phase::learn, K::progress, 505, 30, {{"epoch", 1}, {"loss", 0.5}});
  event(Phase::learn, K::end, 510, 0.25, derived);
  event(Phase::verify, K::begin, 510, 0.25, derived);
  event(Phase::verify, K::end, 510, 0.25, derived);
  event(Phase::save, K::begin, 510, 0.25);
  event(Phase::save, K::end, 511, 0.25);
  const double off_at = created + 10 + 11 + 0.5;
  REQUIRE(f.ledger.record_mark(2, Phase::poweroff, Mark::begin, off_at, ClockDomain::daemon).ok());
  REQUIRE(f.ledger.record_mark(2, Phase::poweroff, Mark::end, off_at + 1, ClockDomain::daemon).ok());
  REQUIRE(f.ledger.advance(2, RunStatus::terminating, "saved").ok());
  REQUIRE(f.ledger.advance(2, RunStatus::done, "done").ok());
  Views v(f.store, f.ledger);
  auto r = v.run(2);
  REQUIRE(r.ok());
  INFO(r->dump(2));
  CHECK((*r)["unmarked"] == json::array({"start", "verify"}));
  CHECK((*r)["phases"]["start"].is_null());
  CHECK((*r)["phases"]["verify"].is_null());
  CHECK((*r)["phases"]["learn"] == 8.0);
  // t_sum is the phases that ran, and the run is priced.
  double sum = 0;
  for (const auto& [name, secs] : (*r)["phases"].items()) sum += secs.is_null() ? 0.0 : secs.get<double>();
  CHECK((*r)["t_sum"].get<double>() == doctest::Approx(sum));
  CHECK((*r)["cost"].contains("per_hour"));
  CHECK_FALSE((*r)["cost"]["per_hour"].contains("partial"));
  // The offset is the fastest arrival's (0.25 s): the phases' ends are when they happened, not when they arrived.
  const json& at = (*r)["phase_times"];
  CHECK(at["startup"]["began_at"] == created);
  CHECK(at["startup"]["ended_at"].get<double>() == doctest::Approx(created + 12));  // the first sign of life
  CHECK(at["install"]["ended_at"].get<double>() == doctest::Approx(created + 11.25));
  CHECK(at["learn"]["ended_at"].get<double>() == doctest::Approx(created + 20.25));
  CHECK(at["save"]["ended_at"].get<double>() == doctest::Approx(created + 21.25));
  CHECK(at["poweroff"]["ended_at"].get<double>() == doctest::Approx(off_at + 1));
  // The epoch that sat 30 s in a spool is stamped with when it ended, and keeps its numbers.
  REQUIRE((*r)["epochs"].size() == 1);
  CHECK((*r)["epochs"][0]["at"].get<double>() == doctest::Approx(created + 15.25));
  CHECK((*r)["epochs"][0]["loss"] == 0.5);
}

TEST_CASE("a user's number named derived leaves the phase as measured") {
  DaemonFixture f;
  REQUIRE(f.ledger.begin_attempt(2, {"local", "local-2c", "on-demand", 0.085}).ok());
  REQUIRE(f.ledger.record_mark(2, Phase::verify, Mark::begin, 10, ClockDomain::agent).ok());
  REQUIRE(f.ledger.record_mark(2, Phase::verify, Mark::end, 10, ClockDomain::agent, {{"derived", 1}}).ok());
  Views v(f.store, f.ledger);
  auto r = v.run(2);
  REQUIRE(r.ok());
  CHECK((*r)["phases"]["verify"] == 0.0);
  CHECK((*r)["unmarked"].empty());
}

namespace {
// The summary of `runs` (run views as GET /v1/runs/{id} shows them; ids and the experiment's id filled in here), each
// recorded as the settling of a finished run records it.
constexpr const char* kTenRuns = R"({"name":"ten","workload":{"epochs":1,"limit":100},
    "configs":[{"provider":"local","instance_type":"local-1c"}],"repetitions":10})";

json summary_of(json runs, const std::vector<billing::BillingRule>& rules) {
  DaemonFixture f;  // runs 1-2, then 3-12
  REQUIRE(runs.size() <= 10);
  const int64_t experiment = tsum::testing::create_experiment(f.store, kTenRuns);
  int64_t id = 2;
  for (auto& r : runs) {
    r["id"] = ++id;
    r["experiment_id"] = experiment;
    REQUIRE(record_run_values(*f.db, r).ok());
  }
  auto s = experiment_summary(*f.db, experiment, rules);
  REQUIRE(s.ok());
  return *s;
}
}  // namespace

TEST_CASE("summary: cheapest per rule, ties broken toward the faster config, and the fastest config") {
  auto rules = std::vector<billing::BillingRule>{*billing::parse_rule("per_hour"), *billing::parse_rule("per_second_60s_min")};
  auto run = [](int idx, double t, double hourly, const char* type) {
    json cost = json::object();
    for (const char* name : {"per_hour", "per_second_60s_min"}) {
      auto rule = *billing::parse_rule(name);
      cost[name] = {{"billed_s", billing::billed_seconds(rule, t)}, {"amount", billing::cost(rule, hourly, t)},
                    {"currency", "USD"}};
    }
    return json{{"status", "done"}, {"config_index", idx}, {"t_sum", t},
                {"config", {{"provider", "local"}, {"instance_type", type}}}, {"cost", cost}};
  };
  // 1 core at half the price takes 2.1x as long: cheaper inside the one billed hour, dearer per second.
  json runs = json::array({run(0, 2100, 0.05, "local-1c"), run(1, 1000, 0.10, "local-2c")});
  auto s = summary_of(runs, rules);
  CHECK(s["cheapest"]["per_hour"]["config"]["instance_type"] == "local-1c");
  CHECK(s["cheapest"]["per_second_60s_min"]["config"]["instance_type"] == "local-2c");
  CHECK(s["fastest"]["config"]["instance_type"] == "local-2c");

  // Equal cost under per_hour (both inside the first hour at the same price): the faster one wins.
  json tie = json::array({run(0, 1900, 0.10, "local-1c"), run(1, 1000, 0.10, "local-2c")});
  CHECK(summary_of(tie, rules)["cheapest"]["per_hour"]["config"]["instance_type"] == "local-2c");

  // Failed runs do not count; repetitions are averaged.
  json reps = json::array({run(0, 100, 0.1, "local-1c"), run(0, 300, 0.1, "local-1c")});
  reps.push_back(run(1, 1, 0.1, "local-2c"));
  reps.back()["status"] = "failed";
  auto s2 = summary_of(reps, rules);
  CHECK(s2["configs"].size() == 1);
  CHECK(s2["configs"][0]["mean_t_sum"] == 200);
  CHECK(s2["fastest"]["config"]["instance_type"] == "local-1c");
  CHECK(summary_of(json::array(), rules) == json{{"configs", json::array()}, {"cheapest", json::object()}, {"fastest", nullptr}});
}

TEST_CASE("aggregation per config: mean, stderr, min and max of every phase, of t_sum and of cost") {
  auto rules = std::vector<billing::BillingRule>{*billing::parse_rule("per_second_60s_min")};
  auto run = [](double learn, double startup = 5) {
    const double t = learn + startup;
    return json{{"status", "done"}, {"config_index", 0}, {"t_sum", t},
                {"config", {{"provider", "local"}, {"instance_type", "local-1c"}}},
                {"phases", {{"startup", startup}, {"learn", learn}}},
                {"cost", {{"per_second_60s_min", {{"amount", t}, {"currency", "USD"}}}}}};
  };
  json runs = json::array();
  for (double learn : {2, 4, 4, 4, 5, 5, 7, 9}) runs.push_back(run(learn));  // mean 5, sample sd sqrt(32/7)
  auto c = summary_of(runs, rules)["configs"][0];
  CHECK(c["runs_done"] == 8);
  CHECK(c["phases"]["learn"]["n"] == 8);
  CHECK(c["phases"]["learn"]["mean"].get<double>() == doctest::Approx(5));
  CHECK(c["phases"]["learn"]["stderr"].get<double>() == doctest::Approx(std::sqrt(32.0 / 7) / std::sqrt(8.0)));
  CHECK(c["phases"]["learn"]["min"] == 2);
  CHECK(c["phases"]["learn"]["max"] == 9);
  CHECK(c["phases"]["startup"]["stderr"] == 0);
  CHECK(c["t_sum"]["min"] == 7);
  CHECK(c["t_sum"]["max"] == 14);
  CHECK(c["cost"]["per_second_60s_min"]["mean"].get<double>() == doctest::Approx(10));
  CHECK(c["mean_cost"]["per_second_60s_min"].get<double>() == doctest::Approx(10));
  CHECK(c["currency"] == "USD");
  CHECK(summary_of(json::array({run(3)}), rules)["configs"][0]["t_sum"]["stderr"] == 0);

  // Values far from zero keep their spread: the sums are kept about the first value, not about zero.
  json far = json::array();
  for (double learn : {1e9 + 1, 1e9 + 2, 1e9 + 3}) far.push_back(run(learn, 0));
  auto t = summary_of(far, rules)["configs"][0]["t_sum"];
  CHECK(t["mean"].get<double>() == doctest::Approx(1e9 + 2).epsilon(1e-15));
  CHECK(t["stderr"].get<double>() == doctest::Approx(1 / std::sqrt(3.0)));
}

TEST_CASE("a run recorded again has its old values taken out, its config's extremes found among the rest") {
  DaemonFixture f;  // runs 1-2
  tsum::testing::create_experiment(f.store, kTenRuns);  // runs 3-12
  auto rules = std::vector<billing::BillingRule>{*billing::parse_rule("per_minute")};
  auto view = [&](int64_t id, double t, const char* status = "done") {
    return json{{"id", id}, {"experiment_id", f.experiment_id}, {"status", status}, {"config_index", 0}, {"t_sum", t},
                {"config", {{"provider", "local"}, {"instance_type", "local-1c"}}}, {"phases", {{"learn", t}}},
                {"cost", {{"per_minute", {{"amount", t / 100}, {"currency", "EUR"}}}}}};
  };
  for (int64_t id : {1, 2, 3}) REQUIRE(record_run_values(*f.db, view(id, 10.0 * id)).ok());
  auto t_sum = [&] { return (*experiment_summary(*f.db, f.experiment_id, rules))["configs"][0]["t_sum"]; };
  CHECK(t_sum()["max"] == 30);
  REQUIRE(record_run_values(*f.db, view(3, 25)).ok());  // settled again with another t_sum
  CHECK(t_sum()["n"] == 3);
  CHECK(t_sum()["max"] == 25);
  CHECK(t_sum()["mean"].get<double>() == doctest::Approx(55.0 / 3));
  REQUIRE(record_run_values(*f.db, view(1, 10, "failed")).ok());  // no longer done: out of the summary
  CHECK(t_sum()["n"] == 2);
  CHECK(t_sum()["min"] == 20);
  CHECK(t_sum()["stderr"].get<double>() == doctest::Approx(2.5));
  for (int64_t id : {2, 3}) REQUIRE(record_run_values(*f.db, view(id, 0, "cancelled")).ok());
  CHECK((*experiment_summary(*f.db, f.experiment_id, rules))["configs"].empty());
  REQUIRE(record_run_values(*f.db, view(2, 40)).ok());  // a config emptied and filled again
  CHECK(t_sum()["n"] == 1);
  CHECK(t_sum()["mean"] == 40);
  CHECK(t_sum()["min"] == 40);
}

TEST_CASE("a finished run's body is kept with its ETag until the ledger tells of a change to that run") {
  DaemonFixture f;
  finish_run(f, 1, {5, 1, 2, 3, 40, 4, 1, 2.5});
  Views v(f.store, f.ledger);
  auto a = v.run_body(1), b = v.run_body(1);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->get() == b->get());  // the same kept body
  CHECK(json::parse((*a)->text) == *v.run(1));
  CHECK((*a)->etag.size() == 18);
  CHECK((*a)->etag.front() == '"');
  // A live run is built anew each time (equal text and ETag while nothing changes).
  auto live1 = v.run_body(2), live2 = v.run_body(2);
  REQUIRE(live1.ok());
  CHECK(live1->get() != live2->get());
  CHECK((*live1)->etag == (*live2)->etag);
  CHECK(v.run_body(77).code() == Code::not_found);

  // A change the ledger reports (here an instance handle recorded late) drops the kept body when the
  // observer forgets it, as the daemon wires it; without forget() the old body would still be served.
  f.ledger.set_observer([&](int64_t run) { v.forget(run); });
  REQUIRE(f.ledger.set_instance(1, json{{"id", "i-late"}}).ok());
  auto c = v.run_body(1);
  REQUIRE(c.ok());
  CHECK(c->get() != a->get());
  CHECK((*c)->etag != (*a)->etag);
  CHECK(json::parse((*c)->text)["instance"]["id"] == "i-late");
}

TEST_CASE("what a run's agent saw of memory while it learned, over its machine's memory") {
  const json view = {{"stats", {{"learn", {{"rss_bytes", {{"min", 1e8}, {"avg", 1e9}, {"max", 3221225472.0}}}}}}},
                     {"machine", {{"memory_gib", 4}}}};
  REQUIRE(learn_memory_used(view).has_value());
  CHECK(*learn_memory_used(view) == doctest::Approx(0.75));
  json no_stats = view;
  no_stats["stats"] = json::object();
  CHECK_FALSE(learn_memory_used(no_stats));
  json unknown_memory = view;
  unknown_memory["machine"] = nullptr;
  CHECK_FALSE(learn_memory_used(unknown_memory));
  unknown_memory["machine"] = {{"memory_gib", 0}};
  CHECK_FALSE(learn_memory_used(unknown_memory));
  json odd = view;
  odd["stats"]["learn"] = "none";
  CHECK_FALSE(learn_memory_used(odd));
  CHECK_FALSE(learn_memory_used(json::array()));
}
