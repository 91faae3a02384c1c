// Budgets on a FakeClock with exact arithmetic: a billing step of 60 s at 15/h costs exactly 0.25, so every
// charge is a multiple of 0.25 and comparisons need no tolerance.
#include <doctest/doctest.h>

#include <cmath>

#include "daemon/schedules/budget.h"
#include "daemon/fixture.h"

using namespace tsum;
using namespace tsum::daemon;

namespace {

constexpr double kPrice = 15;       // per hour
constexpr double kStepCost = 0.25;  // one 60 s step at kPrice

struct BudgetFixture {
  testing::TempDir dir;
  FakeClock clock{1'700'000'000};  // 2023-11-14T22:13:20Z
  std::unique_ptr<Db> db = testing::open_migrated(dir.file("t.db"));
  Store store{*db, clock};
  Ledger ledger{*db, clock};
  Budget budget;

  explicit BudgetFixture(BudgetOptions opts = {}) : budget(*db, clock, opts) {}

  // An experiment of `runs` local-1c runs billed per started minute; `extra` adds fields (budget, deadline).
  int64_t experiment(int runs, const std::string& extra, std::optional<int64_t> schedule = std::nullopt) {
    auto spec = parse_experiment_spec(R"({"workload":{"limit":100},"billing":["step:60"],"repetitions":)" +
                                      std::to_string(runs) +
                                      R"(,"configs":[{"provider":"local","instance_type":"local-1c"}])" + extra + "}");
    REQUIRE_MESSAGE(spec.ok(), spec.error().detail);
    auto id = store.create_experiment(*spec, {{spec->configs[0], kPrice, "USD"}}, schedule);
    REQUIRE(id.ok());
    return *id;
  }
  std::vector<int64_t> runs_of(int64_t experiment_id) {
    auto runs = store.runs_of(experiment_id);
    REQUIRE(runs.ok());
    std::vector<int64_t> out;
    for (const auto& r : *runs) out.push_back(r.id);
    return out;
  }
  // The run's instance is created now (the startup begin mark the run manager writes before create).
  void start(int64_t run) {
    REQUIRE(ledger.advance(run, RunStatus::provisioning, "").ok());
    REQUIRE(ledger.record_mark(run, Phase::startup, Mark::begin, clock.now_s(), ClockDomain::daemon).ok());
  }
  // The instance is confirmed gone now.
  void finish(int64_t run) {
    REQUIRE(ledger.record_mark(run, Phase::poweroff, Mark::begin, clock.now_s(), ClockDomain::daemon).ok());
    REQUIRE(ledger.record_mark(run, Phase::poweroff, Mark::end, clock.now_s(), ClockDomain::daemon).ok());
    REQUIRE(ledger.advance(run, RunStatus::cancelled, "test").ok());
  }
  Budget::Verdict verdict(int64_t run, const std::set<int64_t>& live) {
    auto a = budget.admit(run, live);
    REQUIRE_MESSAGE(a.ok(), a.error().detail);
    return a->verdict;
  }
  bool over(int64_t run) {
    auto o = budget.over_cap(run);
    REQUIRE_MESSAGE(o.ok(), o.error().detail);
    return o->has_value();
  }
};

}  // namespace

TEST_CASE("charge rounds up to the billing step; month_start is the first second of the UTC month") {
  auto rule = billing::parse_rule("step:60").value();
  CHECK(charge(rule, kPrice, 0.5) == kStepCost);
  CHECK(charge(rule, kPrice, 60) == kStepCost);
  CHECK(charge(rule, kPrice, 60.5) == 2 * kStepCost);
  CHECK(month_start(1'700'000'000) == 1'698'796'800);  // 2023-11-01T00:00:00Z
  CHECK(month_start(1'709'251'199) == 1'706'745'600);  // 2024-02-29T23:59:59Z → 2024-02-01
  CHECK(month_start(1'698'796'800) == 1'698'796'800);
}

TEST_CASE("a run starts only if its worst case at the deadline fits what is left, live runs reserving theirs") {
  BudgetFixture f;
  // Worst case per run: 120 s deadline = 2 steps = 0.5. Cap 1.1 fits two at a time.
  int64_t e = f.experiment(3, R"(,"budget":1.1,"deadline":120)");
  auto runs = f.runs_of(e);
  CHECK(f.verdict(runs[0], {}) == Budget::Verdict::start);
  f.start(runs[0]);
  CHECK(f.verdict(runs[1], {runs[0]}) == Budget::Verdict::start);
  f.start(runs[1]);
  auto third = f.budget.admit(runs[2], {runs[0], runs[1]});
  CHECK(third->verdict == Budget::Verdict::wait);  // 0.1 left while both may still cost 0.5 each
  CHECK(third->reason.find("budget: experiment 1 has 0.1000 of 1.1000 left") == 0);

  f.clock.advance(50);  // both ran one step (0.25 each)
  f.finish(runs[0]);
  CHECK(f.verdict(runs[2], {runs[1]}) == Budget::Verdict::wait);  // 1.1 - 0.25 - 0.5 = 0.35 < 0.5
  f.finish(runs[1]);
  CHECK(f.verdict(runs[2], {}) == Budget::Verdict::start);  // 1.1 - 0.5 = 0.6 > 0.5
}

TEST_CASE("a run that can never fit is refused; one that exactly fills what is left is refused too") {
  BudgetFixture f;
  int64_t small = f.experiment(1, R"(,"budget":0.4,"deadline":120)");  // worst 0.5 > 0.4, nothing live
  auto a = f.budget.admit(f.runs_of(small)[0], {});
  CHECK(a->verdict == Budget::Verdict::refuse);
  CHECK(a->reason == "budget: experiment 1 has 0.4000 of 0.4000 left, and run 1 may cost up to 0.5000");
  int64_t exact = f.experiment(1, R"(,"budget":0.5,"deadline":120)");  // it would reach the cap: not below it
  CHECK(f.verdict(f.runs_of(exact)[0], {}) == Budget::Verdict::refuse);
  int64_t none = f.experiment(1, R"(,"deadline":120)");  // no cap at all
  CHECK(f.verdict(f.runs_of(none)[0], {}) == Budget::Verdict::start);
}

TEST_CASE("overshoot is below one billing step of one instance when checks come at most a step apart") {
  // For caps on and off step boundaries and check intervals up to one step, the run is stopped at the first
  // check where its charge reached the cap: then cap <= charge < cap + one step, and the check before saw less.
  for (double cap : {0.1, 0.25, 0.3, 0.5, 0.6, 1.0, 1.75, 1.9}) {
    for (double tick : {1.0, 7.0, 13.0, 59.0, 60.0}) {
      CAPTURE(cap);
      CAPTURE(tick);
      BudgetFixture f;
      int64_t e = f.experiment(1, R"(,"budget":)" + std::to_string(cap));
      int64_t run = f.runs_of(e)[0];
      f.start(run);
      const double t0 = f.clock.now_s();
      double before = 0;
      int checks = 0;
      while (!f.over(run) && ++checks < 10000) {
        before = kStepCost * std::ceil((f.clock.now_s() - t0) / 60);
        f.clock.advance(tick);
      }
      REQUIRE(checks < 10000);
      f.finish(run);  // the instance is gone within the step it was stopped in
      double billed = *f.budget.month_charge();
      CHECK(billed == kStepCost * std::ceil((f.clock.now_s() - t0) / 60));
      CHECK(before < cap);
      CHECK(billed >= cap);
      CHECK(billed - cap < kStepCost);
    }
  }
}

TEST_CASE("checks further apart than a step can overshoot by more: the bound needs the once-a-step check") {
  BudgetFixture f;
  int64_t run = f.runs_of(f.experiment(1, R"(,"budget":0.3)"))[0];
  f.start(run);
  f.clock.advance(150);  // three steps started before anyone looked
  CHECK(f.over(run));
  CHECK(*f.budget.month_charge() - 0.3 == doctest::Approx(0.45));
}

TEST_CASE("a schedule's budget spans all its firings") {
  BudgetFixture f;
  auto ins = f.db->prepare(
      "INSERT INTO schedules (name, cron, timezone, experiment, budget, missed, enabled, created_at, updated_at) "
      "VALUES ('s', '0 * * * *', 'UTC', '{}', 0.6, 'skip', 1, 0, 0)");
  REQUIRE(ins->run().ok());
  int64_t first = f.experiment(1, R"(,"deadline":60)", 1);
  int64_t second = f.experiment(1, R"(,"deadline":60)", 1);
  int64_t other = f.experiment(1, R"(,"deadline":60)");  // not the schedule's: not counted
  int64_t r1 = f.runs_of(first)[0], r2 = f.runs_of(second)[0], r3 = f.runs_of(other)[0];
  f.start(r3);
  f.clock.advance(150);
  f.finish(r3);
  f.start(r1);
  f.clock.advance(90);  // two steps: 0.5 of the schedule's 0.6
  CHECK_FALSE(f.over(r1));
  f.finish(r1);
  auto a = f.budget.admit(r2, {});
  CHECK(a->verdict == Budget::Verdict::refuse);  // worst 0.25 > 0.1 left
  CHECK(a->reason.find("budget: schedule 1 has 0.1000 of 0.6000 left") == 0);
  // Raising the schedule's budget lets the next firing start.
  REQUIRE(f.db->exec("UPDATE schedules SET budget = 1.0 WHERE id = 1").ok());
  CHECK(f.verdict(r2, {}) == Budget::Verdict::start);
  f.start(r2);
  f.clock.advance(120);  // 0.5 + 0.5 = the cap of 1.0
  CHECK(f.over(r2));
}

TEST_CASE("the monthly budget counts the instances started this UTC month, live ones up to now") {
  BudgetFixture f({.monthly = 1.0, .run_deadline = std::chrono::seconds(60)});
  int64_t e = f.experiment(3, "");
  auto runs = f.runs_of(e);
  f.clock.set(1'698'796'800 - 100);  // October: does not count in November
  f.start(runs[0]);
  f.clock.advance(200);  // 4 steps across the month boundary, all charged to October
  f.finish(runs[0]);
  CHECK(*f.budget.month_charge() == 0);
  f.start(runs[1]);
  f.clock.advance(170);  // 3 steps: 0.75 this month
  CHECK(*f.budget.month_charge() == 0.75);
  CHECK(f.verdict(runs[2], {runs[1]}) == Budget::Verdict::wait);  // 1.0 - 0.75 = 0.25, worst 0.25: not below
  CHECK_FALSE(f.over(runs[1]));
  f.clock.advance(20);  // a 4th step: 1.0 reached
  CHECK(f.over(runs[1]));
  auto why = f.budget.over_cap(runs[1]);
  CHECK(**why == "budget: the monthly budget reached its cap of 1.0000 (1.0000 billed)");
}
