// The sums the database keeps as runs change (sql/0013_totals.sql, daemon/views/totals.h) and the paged lists
// (daemon/views/listing.h): the counters always equal a recount, a finished run's cost is settled once and again after a
// late mark, pages walk every row once, and the work of a page or a scrape does not grow with the history.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "common/lru.h"
#include "daemon/schedules/budget.h"
#include "daemon/fixture.h"
#include "daemon/views/listing.h"
#include "daemon/views/metrics.h"
#include "daemon/planning/plan_history.h"
#include "daemon/planning/spot_risk.h"
#include "daemon/store/token_store.h"
#include "daemon/views/totals.h"
#include "daemon/views/views.h"

using namespace tsum;
using namespace tsum::daemon;
using tsum::testing::scalar;

namespace {

std::map<std::string, int64_t> pairs(Db& db, const std::string& sql) {
  auto st = db.prepare(sql);
  REQUIRE(st.ok());
  std::map<std::string, int64_t> out;
  for (;;) {
    auto row = st->step();
    REQUIRE(row.ok());
    if (!*row) break;
    out[st->text(0)] = st->int64(1);
  }
  return out;
}

constexpr const char* kExperiment = R"({"name":"x","workload":{"epochs":1,"limit":100},"configs":[
    {"provider":"local","instance_type":"local-1c"},{"provider":"local","instance_type":"local-2c"}],
    "repetitions":3,"billing":["per_second_60s_min","per_hour"]})";

// Takes run `id` through all eight phases (10 s each, learn `learn` s; daemon clock) to done.
void finish(testing::DaemonFixture& f, int64_t id, double learn = 10) {
  REQUIRE(f.ledger.advance(id, RunStatus::provisioning, "").ok());
  double t = f.clock.now_s();
  for (auto name : kPhaseNames) {
    Phase ph = *parse_phase(name);
    REQUIRE(f.ledger.record_mark(id, ph, Mark::begin, t, ClockDomain::daemon).ok());
    const double secs = name == "learn" ? learn : 10;
    REQUIRE(f.ledger.record_mark(id, ph, Mark::end, t + secs, ClockDomain::daemon).ok());
    t += secs;
  }
  f.clock.set(t);
  REQUIRE(f.ledger.advance(id, RunStatus::terminating, "").ok());
  REQUIRE(f.ledger.advance(id, RunStatus::done, "").ok());
}

}  // namespace

TEST_CASE("the counters by status always equal a recount of the runs") {
  testing::DaemonFixture f;
  for (int i = 0; i < 3; ++i) testing::create_experiment(f.store, kExperiment);
  const int64_t runs = scalar(*f.db, "SELECT COUNT(*) FROM runs");
  std::mt19937 rng(7);
  const RunStatus path[] = {RunStatus::provisioning, RunStatus::booting, RunStatus::learning, RunStatus::terminating};
  for (int step = 0; step < 200; ++step) {
    const int64_t id = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(runs));
    const int pick = static_cast<int>(rng() % 6);
    if (pick < 4) (void)f.ledger.advance(id, path[pick], "");  // refused when backwards or finished: no change
    else (void)f.ledger.advance(id, pick == 4 ? RunStatus::failed : RunStatus::cancelled, "");
  }
  CHECK(pairs(*f.db, "SELECT status, n FROM status_counts WHERE n > 0") ==
        pairs(*f.db, "SELECT status, COUNT(*) FROM runs GROUP BY status"));
  for (int64_t e = 1; e <= 4; ++e) {
    CAPTURE(e);
    const std::string id = std::to_string(e);
    CHECK(pairs(*f.db, "SELECT status, n FROM run_counts WHERE n > 0 AND experiment_id = " + id) ==
          pairs(*f.db, "SELECT status, COUNT(*) FROM runs WHERE experiment_id = " + id + " GROUP BY status"));
  }
  Listing listing(*f.db, f.store);
  auto counts = listing.status_counts();
  REQUIRE(counts.ok());
  int64_t total = 0;
  for (const auto& [_, n] : *counts) total += n;
  CHECK(total == runs);
}

TEST_CASE("the phase histogram counts each phase once, whichever of its marks comes last") {
  testing::DaemonFixture f;
  REQUIRE(f.ledger.advance(1, RunStatus::provisioning, "").ok());
  // learn's end before its begin (an agent's spool replayed out of order); a mark sent twice.
  REQUIRE(f.ledger.record_mark(1, Phase::learn, Mark::end, 107, ClockDomain::agent).ok());
  CHECK(scalar(*f.db, "SELECT COALESCE(SUM(n), 0) FROM phase_hist") == 0);
  REQUIRE(f.ledger.record_mark(1, Phase::learn, Mark::begin, 100, ClockDomain::agent).ok());
  REQUIRE(f.ledger.record_mark(1, Phase::learn, Mark::begin, 90, ClockDomain::agent).ok());
  REQUIRE(f.ledger.record_mark(1, Phase::startup, Mark::begin, 5, ClockDomain::daemon).ok());
  REQUIRE(f.ledger.record_mark(1, Phase::startup, Mark::end, 5.05, ClockDomain::daemon).ok());
  auto learn = pairs(*f.db, "SELECT phase || ':' || bucket, n FROM phase_hist");
  CHECK(learn == std::map<std::string, int64_t>{{"learn:5", 1}, {"startup:0", 1}});  // 7 s: le=10; 0.05 s: le=0.1
  CHECK(scalar(*f.db, "SELECT CAST(ROUND(sum) AS INTEGER) FROM phase_hist WHERE phase = 'learn'") == 7);
}

TEST_CASE("a finished run's cost is settled once into the sums, and again after a late mark") {
  testing::DaemonFixture f;
  f.clock.set(1'700'000'000);
  Views views(f.store, f.ledger);
  Budget budget(*f.db, f.clock, {});
  Totals totals(*f.db, views, budget);
  finish(f, 1);
  CHECK(scalar(*f.db, "SELECT COUNT(*) FROM run_settle") == 1);
  auto settled = totals.settle();
  REQUIRE(settled.ok());
  CHECK(*settled == 1);
  CHECK(scalar(*f.db, "SELECT COUNT(*) FROM run_settle") == 0);
  auto spend = totals.spend();
  REQUIRE(spend.ok());
  // The fixture's experiment: 80 s at 0.085 USD/h under its rules; per_hour bills one hour.
  CHECK((*spend)[{"per_hour", "USD"}] == doctest::Approx(0.085));
  auto by_experiment = totals.experiment_spend(f.experiment_id);
  REQUIRE(by_experiment.ok());
  REQUIRE(!by_experiment->empty());
  CHECK(by_experiment->front().runs == 1);
  auto charged = budget.charge_by_provider();
  REQUIRE(charged.ok());
  CHECK((*charged)[{"local", "USD"}] == doctest::Approx(80 * 0.085 / 3600));
  // Settling again changes nothing; a second finished run adds to the sums.
  REQUIRE(totals.settle_all().ok());
  finish(f, 2);
  REQUIRE(totals.settle_all().ok());
  spend = totals.spend();
  CHECK((*spend)[{"per_hour", "USD"}] == doctest::Approx(2 * 0.085));
  charged = budget.charge_by_provider();
  CHECK((*charged)[{"local", "USD"}] == doctest::Approx(2 * 80 * 0.085 / 3600));
  // A late mark on a finished run queues it again; its figures are replaced, not added twice.
  auto late = f.db->prepare("INSERT INTO phase_marks (run_id, attempt, phase, mark, t, clock, received_at) "
                            "VALUES (2, 2, 'learn', 'begin', 1, 'agent', 1)");
  REQUIRE(late.ok());
  REQUIRE(late->run().ok());
  CHECK(scalar(*f.db, "SELECT COUNT(*) FROM run_settle") == 1);
  REQUIRE(totals.settle_all().ok());
  spend = totals.spend();
  CHECK((*spend)[{"per_hour", "USD"}] == doctest::Approx(2 * 0.085));
  CHECK(scalar(*f.db, "SELECT SUM(runs) FROM experiment_spend WHERE rule = 'per_hour'") == 2);
  charged = budget.charge_by_provider();
  CHECK((*charged)[{"local", "USD"}] == doctest::Approx(2 * 80 * 0.085 / 3600));
}

TEST_CASE("a run that cannot be priced leaves the queue without holding up the others") {
  testing::DaemonFixture f;
  f.clock.set(1'700'000'000);
  Views views(f.store, f.ledger);
  Budget budget(*f.db, f.clock, {});
  Totals totals(*f.db, views, budget);
  // An experiment whose stored spec no longer parses (a bug, an older version), with a finished run.
  for (const char* sql : {"INSERT INTO experiments (id, name, spec, created_at) VALUES (9, 'old', '{', 1)",
                          "INSERT INTO runs (id, experiment_id, config_index, repetition, provider, instance_type, "
                          "hourly_price, currency, status, created_at, updated_at) "
                          "VALUES (90, 9, 0, 1, 'local', 'local-1c', 0.085, 'USD', 'learning', 1, 1)",
                          "INSERT INTO phase_marks (run_id, attempt, phase, mark, t, clock, received_at) "
                          "VALUES (90, 1, 'startup', 'begin', 1, 'daemon', 1)",
                          "UPDATE runs SET status = 'failed' WHERE id = 90"}) {
    auto st = f.db->prepare(sql);
    REQUIRE(st.ok());
    REQUIRE(st->run().ok());
  }
  finish(f, 1);
  CHECK(scalar(*f.db, "SELECT COUNT(*) FROM run_settle") == 2);
  REQUIRE(totals.settle_all().ok());
  CHECK(scalar(*f.db, "SELECT COUNT(*) FROM run_settle") == 0);
  CHECK(scalar(*f.db, "SELECT COUNT(*) FROM run_costs WHERE run_id = 1") > 0);
  CHECK(scalar(*f.db, "SELECT COUNT(*) FROM run_charges WHERE run_id = 90") == 0);
}

TEST_CASE("a plan learns from the samples settled runs leave: each done run once, as its view shows it") {
  testing::DaemonFixture f;  // experiment 1: runs 1-2, the workload {"epochs":1,"limit":100}
  f.clock.set(1'700'000'000);
  Views views(f.store, f.ledger);
  Budget budget(*f.db, f.clock, {});
  Totals totals(*f.db, views, budget);
  testing::create_experiment(f.store, kExperiment);  // the same workload: runs 3-8
  std::string other = kExperiment;
  other.replace(other.find("\"epochs\":1"), 10, "\"epochs\":2");
  testing::create_experiment(f.store, other);  // another workload: runs 9-14
  for (int64_t id : {1, 3, 4, 5, 9}) finish(f, id);
  REQUIRE(f.ledger.advance(6, RunStatus::cancelled, "").ok());
  REQUIRE(totals.settle_all().ok());
  const auto workload = f.store.experiment_as_stored(1)->spec.workload().to_json();
  auto h = plan_history(*f.db, workload);
  REQUIRE(h.ok());
  REQUIRE(h->runs.size() == 4);  // runs 1, 3, 4 and 5; the cancelled one measured nothing
  CHECK(h->restarts.empty());
  CHECK(h->warm + h->cold == 4);
  std::map<std::string, int> per_config;
  for (const auto& m : h->runs) {
    ++per_config[m.cfg.config];
    CHECK(m.cfg.provider == "local");
    CHECK(m.cfg.cores == (m.cfg.instance_type == "local-1c" ? 1 : 2));
    for (double p : m.phases) CHECK(p == doctest::Approx(10));
  }
  // What the planner read from the views before: the same phases, run by run.
  for (int64_t id : {1, 3, 4, 5}) {
    auto phases = one_machine_phases(*views.run(id));
    for (auto name : kPhaseNames) CHECK(phases[std::string(name)].get<double>() == doctest::Approx(10));
  }
  CHECK(per_config.size() == 2);
  // A limit per config keeps the newest of each.
  auto newest = plan_history(*f.db, workload, 1);
  REQUIRE(newest.ok());
  CHECK(newest->runs.size() == 2);
  auto other_workload = plan_history(*f.db, f.store.experiment_as_stored(3)->spec.workload().to_json());
  REQUIRE(other_workload.ok());
  CHECK(other_workload->runs.size() == 1);
  CHECK(plan_history(*f.db, nlohmann::json{{"epochs", 9}})->runs.empty());
  // A run settled again (a late mark) rewrites its sample rather than adding one.
  auto late = f.db->prepare("INSERT INTO phase_marks (run_id, attempt, phase, mark, t, clock, received_at) "
                            "VALUES (3, 2, 'learn', 'begin', 1, 'agent', 1)");
  REQUIRE(late.ok());
  REQUIRE(late->run().ok());
  REQUIRE(totals.settle_all().ok());
  CHECK(scalar(*f.db, "SELECT COUNT(*) FROM plan_samples") == 5);
}

TEST_CASE("a serving plan reads the curves settled runs leave, newest first up to its limit, without their bulk") {
  testing::DaemonFixture f;  // runs 1-2, the workload {"epochs":1,"limit":100}
  const auto workload = f.store.experiment_as_stored(f.experiment_id)->spec.workload().to_json();
  auto view = [&](int64_t id, const char* status, bool serving) {
    json v = {{"id", id}, {"experiment_id", f.experiment_id}, {"status", status}, {"t_sum", nullptr},
              {"config", {{"provider", "local"}, {"instance_type", "local-1c"}}}, {"epochs", json::array({1, 2})},
              {"stats", {{"learn", json::object()}}}, {"metrics", json::object()}};
    if (serving) v["metrics"]["serving"] = json::array({{{"concurrency", 1}, {"p99_ms", 12.5}}});
    return v;
  };
  REQUIRE(record_plan_sample(*f.db, f.store, view(1, "done", true)).ok());
  REQUIRE(record_plan_sample(*f.db, f.store, view(2, "done", false)).ok());  // no curve: nothing to plan from
  auto h = serving_history(*f.db, workload);
  REQUIRE(h.ok());
  REQUIRE(h->size() == 1);
  CHECK((*h)[0]["id"] == 1);
  CHECK((*h)[0]["metrics"]["serving"][0]["p99_ms"] == 12.5);
  CHECK_FALSE((*h)[0].contains("epochs"));
  CHECK_FALSE((*h)[0].contains("stats"));
  REQUIRE(record_plan_sample(*f.db, f.store, view(2, "done", true)).ok());  // settled again, now with a curve
  CHECK(serving_history(*f.db, workload)->size() == 2);
  CHECK((*serving_history(*f.db, workload, 1))[0]["id"] == 2);  // the newest
  REQUIRE(record_plan_sample(*f.db, f.store, view(1, "failed", true)).ok());
  CHECK(serving_history(*f.db, workload)->size() == 1);
  CHECK(serving_history(*f.db, json{{"epochs", 9}})->empty());
}

TEST_CASE("an experiment's summary is kept as its runs settle, equal to one computed from their views") {
  testing::DaemonFixture f;
  f.clock.set(1'700'000'000);
  Views views(f.store, f.ledger);
  Budget budget(*f.db, f.clock, {});
  Totals totals(*f.db, views, budget);
  const int64_t e = testing::create_experiment(f.store, kExperiment);  // runs 3-8: configs 0, 1 three times each
  const std::map<int64_t, double> learn = {{3, 100}, {4, 3430}, {5, 7}, {6, 3430}, {7, 3700}};
  for (const auto& [id, secs] : learn) finish(f, id, secs);
  REQUIRE(f.ledger.advance(8, RunStatus::failed, "").ok());
  REQUIRE(totals.settle_all().ok());
  const auto rules = f.store.experiment_as_stored(e)->spec.billing;
  auto summary = totals.experiment_summary(e, rules);
  REQUIRE(summary.ok());
  REQUIRE((*summary)["configs"].size() == 2);
  for (const auto& c : (*summary)["configs"]) {
    std::vector<double> t_sums, per_hour;
    for (int64_t id = 3; id <= 8; ++id) {
      auto v = views.run(id);
      if ((*v)["config_index"] != c["config_index"] || (*v)["status"] != "done") continue;
      t_sums.push_back((*v)["t_sum"].get<double>());
      per_hour.push_back((*v)["cost"]["per_hour"]["amount"].get<double>());
    }
    CHECK(c["runs_done"] == t_sums.size());
    CHECK(c["t_sum"]["mean"].get<double>() ==
          doctest::Approx(std::accumulate(t_sums.begin(), t_sums.end(), 0.0) / t_sums.size()));
    CHECK(c["t_sum"]["max"] == *std::ranges::max_element(t_sums));
    CHECK(c["cost"]["per_hour"]["mean"].get<double>() ==
          doctest::Approx(std::accumulate(per_hour.begin(), per_hour.end(), 0.0) / per_hour.size()));
    CHECK(c["phases"]["learn"]["n"] == t_sums.size());
  }
  // Config 0 (t_sum 170, 77 and 3,770 s) is the faster and the cheaper per second, config 1 (3,500 s twice: one
  // billed hour each, where config 0's last run pays two) the cheaper per hour.
  CHECK((*summary)["fastest"]["config_index"] == 0);
  CHECK((*summary)["cheapest"]["per_second_60s_min"]["config_index"] == 0);
  CHECK((*summary)["cheapest"]["per_hour"]["config_index"] == 1);
  // A late mark settles a run again: its values are taken out and put back, not added twice.
  auto late = f.db->prepare("INSERT INTO phase_marks (run_id, attempt, phase, mark, t, clock, received_at) "
                            "VALUES (3, 2, 'learn', 'begin', 1, 'agent', 1)");
  REQUIRE(late.ok());
  REQUIRE(late->run().ok());
  REQUIRE(totals.settle_all().ok());
  CHECK((*totals.experiment_summary(e, rules))["configs"] == (*summary)["configs"]);
  CHECK(scalar(*f.db, "SELECT COUNT(*) FROM run_values WHERE name = 't_sum'") == 5);
}

TEST_CASE("pages walk every run once, in order, each filter with its total") {
  testing::DaemonFixture f;
  for (int i = 0; i < 4; ++i) testing::create_experiment(f.store, kExperiment);  // 2 + 4 x 6 = 26 runs
  for (int64_t id : {3, 5, 9, 20}) REQUIRE(f.ledger.advance(id, RunStatus::failed, "").ok());
  Listing listing(*f.db, f.store);
  for (bool descending : {false, true}) {
    CAPTURE(descending);
    std::vector<int64_t> seen;
    PageRequest page{.limit = 7, .descending = descending};
    for (int pages = 0; pages < 10; ++pages) {
      auto p = listing.runs({}, page);
      REQUIRE(p.ok());
      CHECK(p->total == 26);
      for (const auto& r : p->rows) seen.push_back(r.id);
      if (!p->next_after) break;
      page.after = p->next_after;
    }
    REQUIRE(seen.size() == 26);
    for (size_t i = 1; i < seen.size(); ++i) CHECK((descending ? seen[i] < seen[i - 1] : seen[i] > seen[i - 1]));
  }
  auto failed = listing.runs({.statuses = {RunStatus::failed}}, {.limit = 3});
  REQUIRE(failed.ok());
  CHECK(failed->total == 4);
  CHECK(failed->rows.size() == 3);
  CHECK(failed->next_after == 9);
  auto of_two = listing.runs({.statuses = {RunStatus::failed}, .experiment_id = 2}, {});
  REQUIRE(of_two.ok());
  CHECK(of_two->total == 2);  // runs 3 .. 8 are experiment 2's: 3 and 5
  CHECK(of_two->rows.size() == 2);
  auto typed = listing.runs({.instance_type = "local-2c"}, {.limit = 100});
  REQUIRE(typed.ok());
  CHECK(typed->total == 13);
  for (const auto& r : typed->rows) CHECK(f.store.run(r.id)->instance_type == "local-2c");
  auto none = listing.runs({.created_after = 2e9}, {});
  REQUIRE(none.ok());
  CHECK(none->total == 0);
  CHECK(none->rows.empty());
  auto exps = listing.experiments({}, {.limit = 2, .descending = true});
  REQUIRE(exps.ok());
  CHECK(exps->total == 5);
  REQUIRE(exps->rows.size() == 2);
  CHECK(exps->rows[0].id == 5);
  CHECK(exps->next_after == 4);
}

namespace {

// Adds `n` finished runs of 8 phases to experiment `experiment`, straight into the tables (as many years of a
// daemon would leave them), numbering their repetitions from `first`.
void add_history(Db& db, int64_t experiment, int first, int n) {
  auto runs = db.prepare(
      "WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < ?2) "
      "INSERT INTO runs (experiment_id, config_index, repetition, provider, instance_type, hourly_price, currency, "
      "status, created_at, updated_at) "
      "SELECT ?1, i % 2, ?3 + i, 'local', 'local-' || (1 + i % 2) || 'c', 0.085, 'USD', "
      "CASE WHEN i % 50 = 7 THEN 'failed' ELSE 'done' END, 1.7e9 + i, 1.7e9 + i FROM k");
  REQUIRE(runs.ok());
  REQUIRE(runs->bind(experiment, int64_t{n}, int64_t{first}).run().ok());
  auto marks = db.prepare(
      "INSERT INTO phase_marks (run_id, attempt, phase, mark, t, clock, received_at) "
      "SELECT r.id, 1, p.phase, m.mark, r.created_at + p.k * 10 + (m.mark = 'end') * 10, 'daemon', r.created_at "
      "FROM runs r, (SELECT 'startup' AS phase, 0 AS k UNION ALL SELECT 'learn', 1 UNION ALL SELECT 'poweroff', 2) p, "
      "(SELECT 'begin' AS mark UNION ALL SELECT 'end') m WHERE r.experiment_id = ?1 AND r.repetition >= ?2");
  REQUIRE(marks.ok());
  REQUIRE(marks->bind(experiment, int64_t{first}).run().ok());
  auto tokens = db.prepare(  // each run's token, revoked as the run ended
      "INSERT INTO tokens (hash, scope, run_id, created_at, revoked_at) "
      "SELECT 'h' || id, 'run', id, created_at, created_at FROM runs WHERE experiment_id = ?1 AND repetition >= ?2");
  REQUIRE(tokens.ok());
  REQUIRE(tokens->bind(experiment, int64_t{first}).run().ok());
}

struct Work {
  uint64_t first_page = 0, deep_page = 0, by_status = 0, by_experiment = 0, experiments = 0, metrics = 0;
  uint64_t dispatch = 0, revoke = 0, tokens = 0;  // a dispatch's reads; a run's end; tsumd token list
  uint64_t summary = 0;                           // an experiment's summary (GET /v1/experiments/{id})
};

// The work (daemon/store/db.h count_work) of each read a list endpoint or a scrape makes.
Work measure(testing::DaemonFixture& f, int64_t big_experiment) {
  Views views(f.store, f.ledger);
  Budget budget(*f.db, f.clock, {});
  Totals totals(*f.db, views, budget);
  Listing listing(*f.db, f.store);
  auto work_of = [&](auto&& read) {
    f.db->count_work(true);
    const uint64_t before = f.db->work();
    read();
    const uint64_t used = f.db->work() - before;
    f.db->count_work(false);
    return used;
  };
  auto rows_of = [&](const PageOf<RunRef>& page) {
    for (const auto& r : page.rows) REQUIRE(views.list_row(*f.store.run(r.id)).ok());
  };
  const int64_t runs = scalar(*f.db, "SELECT MAX(id) FROM runs");
  // The history's runs are settled already, as a running daemon settles each within a second of its end.
  REQUIRE(totals.settle_all().ok());
  REQUIRE(scalar(*f.db, "SELECT COUNT(*) FROM run_settle") == 0);
  // Each done run's values, as settling writes them for a run with all eight phases (these have three); the
  // triggers sum them.
  auto values = f.db->prepare(
      "INSERT OR IGNORE INTO run_values (experiment_id, config_index, run_id, name, value) "
      "SELECT r.experiment_id, r.config_index, r.id, n.name, 30 + r.id % 7 FROM runs r, "
      "(SELECT 't_sum' AS name UNION ALL SELECT 'learn') n WHERE r.experiment_id = ? AND r.status = 'done'");
  REQUIRE(values.ok());
  REQUIRE(values->bind(big_experiment).run().ok());
  Work w;
  w.first_page = work_of([&] { rows_of(listing.runs({}, {.limit = 100}).value()); });
  w.deep_page = work_of([&] { rows_of(listing.runs({}, {.limit = 100, .after = runs * 3 / 4}).value()); });
  w.by_status = work_of([&] { rows_of(listing.runs({.statuses = {RunStatus::learning}}, {.limit = 100}).value()); });
  w.by_experiment = work_of([&] {
    rows_of(listing.runs({.experiment_id = big_experiment}, {.limit = 100, .after = runs / 2}).value());
  });
  w.experiments = work_of([&] {
    auto page = listing.experiments({}, {.limit = 50, .descending = true}).value();
    for (const auto& e : page.rows) {
      REQUIRE(listing.status_counts(e.id).ok());
      REQUIRE(totals.experiment_spend(e.id).ok());
    }
  });
  w.metrics = work_of([&] { REQUIRE(render_metrics(*f.db, totals, ProviderCallMetrics{}, budget).ok()); });
  w.dispatch = work_of([&] { REQUIRE(f.store.queue_heads(128).ok()); });
  TokenStore tokens(*f.db, f.clock);
  w.revoke = work_of([&] { REQUIRE(tokens.revoke_run(runs / 2).ok()); });
  w.tokens = work_of([&] { REQUIRE(tokens.list().ok()); });
  w.summary = work_of([&] {
    auto s = totals.experiment_summary(big_experiment, f.store.experiment_as_stored(big_experiment)->spec.billing);
    REQUIRE(s.ok());
    REQUIRE((*s)["configs"].size() == 2);
  });
  return w;
}

}  // namespace

TEST_CASE("a page of runs or experiments, a scrape of /metrics and the run path do as much work at 20,000 runs as at 2,000") {
  testing::DaemonFixture f;
  f.clock.set(1.8e9);
  for (int i = 0; i < 60; ++i) testing::create_experiment(f.store, kExperiment);
  add_history(*f.db, 2, 100, 2000);
  const Work small = measure(f, 2);
  add_history(*f.db, 2, 100'000, 18'000);
  const Work big = measure(f, 2);
  REQUIRE(scalar(*f.db, "SELECT COUNT(*) FROM runs") > 20'000);
  // A full scan of the runs would be some 20 units a 1,000 rows (of kWorkUnit instructions): 10 times the history
  // would show as hundreds more. The same rows read cost the same, give or take the B-trees' one more level.
  for (auto [name, s, b] : {std::tuple{std::string("first page"), small.first_page, big.first_page},
                            {"deep page", small.deep_page, big.deep_page},
                            {"by status", small.by_status, big.by_status},
                            {"by experiment", small.by_experiment, big.by_experiment},
                            {"experiments", small.experiments, big.experiments},
                            {"metrics", small.metrics, big.metrics},
                            {"dispatch", small.dispatch, big.dispatch},
                            {"a run's token revoked", small.revoke, big.revoke},
                            {"token list", small.tokens, big.tokens},
                            {"an experiment's summary", small.summary, big.summary}}) {
    MESSAGE(name << ": " << s << " units at 2,000 runs, " << b << " at 20,000");
    CAPTURE(name);
    CHECK((s > 0 || name.starts_with("a run's") || name.starts_with("token")));  // those two read next to nothing
    CHECK(b <= s * 5 / 4 + 20);
  }
}

TEST_CASE("a cache keeps within its budget, dropping the least recently used first") {
  std::vector<int> evicted;
  Lru<int, std::string> lru(10, [&](const int& k, std::string&) { evicted.push_back(k); });
  lru.put(1, "aaaa", 4);
  lru.put(2, "bbbb", 4);
  CHECK(lru.find(1) != nullptr);  // 1 is now the most recently used
  lru.put(3, "cccc", 4);          // 12 > 10: 2 goes
  CHECK(evicted == std::vector<int>{2});
  CHECK(lru.find(2) == nullptr);
  CHECK(lru.used() == 8);
  lru.put(1, "a", 1);  // replaced, not added
  CHECK(lru.used() == 5);
  CHECK(*lru.find(1) == "a");
  lru.put(4, "too big", 11);  // costlier than the budget: not kept, nothing dropped for it
  CHECK(lru.find(4) == nullptr);
  CHECK(lru.size() == 2);
  lru.erase(3);
  CHECK(lru.used() == 1);
  CHECK(evicted.size() == 1);  // erase() is no eviction
}

TEST_CASE("the dispatcher reads each experiment's oldest queued runs, not the whole queue") {
  testing::DaemonFixture f;  // experiment 1: runs 1-2
  for (int i = 0; i < 3; ++i) testing::create_experiment(f.store, kExperiment);  // 6 runs each: 3-8, 9-14, 15-20
  REQUIRE(f.ledger.advance(1, RunStatus::cancelled, "").ok());
  REQUIRE(f.ledger.advance(3, RunStatus::provisioning, "").ok());
  REQUIRE(f.ledger.advance(4, RunStatus::cancelled, "").ok());
  for (int64_t id = 15; id <= 20; ++id) REQUIRE(f.ledger.advance(id, RunStatus::cancelled, "").ok());
  auto heads = f.store.queue_heads(2);
  REQUIRE(heads.ok());
  std::vector<int64_t> ids;
  for (const auto& e : *heads) ids.push_back(e.run_id);
  CHECK(ids == std::vector<int64_t>{2, 5, 6, 9, 10});  // oldest first; experiment 4 has none queued
  CHECK(heads->front().experiment_id == 1);
  CHECK(heads->front().instance_type == "local-2c");
  CHECK(heads->back().experiment_id == 3);
  // However long the queue behind the heads, a dispatch reads the heads: 200 more queued runs in one more
  // experiment cost one more head.
  auto work = [&] {
    f.db->count_work(true);
    const uint64_t before = f.db->work();
    REQUIRE(f.store.queue_heads(2).ok());
    const uint64_t used = f.db->work() - before;
    f.db->count_work(false);
    return used;
  };
  const uint64_t three = work();
  std::string big = kExperiment;
  big.replace(big.find("\"repetitions\":3"), 15, "\"repetitions\":100");
  testing::create_experiment(f.store, big);
  CHECK(f.store.queue_heads(2)->size() == 7);
  CHECK(work() <= three * 3 / 2 + 4);
}
