// Property tests of the search's spending on 1,000 generated tables of the published traces' shape
// (bench/trace_replay.h: 50-70 configs in 3-8 families of 1-5 node clusters, memory cliffs, runs that time out,
// single noisy runs with stragglers), each searched from nothing with the default budget under one of four
// billing rules and 10 or 100 planned runs:
//  - the budget holds: no probe starts unless the spend so far plus its p90 fits the budget of its round, and no
//    probe, however slow, takes the spend past that budget (it is stopped at the limit it was given);
//  - the user never pays more in all (the probes plus the planned runs on the pick) than running every planned
//    run on the first probe, plus the budget;
//  - no blind pick: the recommendation never costs more than 5% over the best config the search measured.
#include <doctest/doctest.h>

#include <cmath>
#include <set>

#include "trace_replay.h"

using namespace tsum::billing;
using namespace tsum::bench;

TEST_CASE("on 1,000 generated tables the budget holds, the total never exceeds the first probe's plus the budget, "
          "and no pick is blind") {
  const char* rules[] = {"step:1,min:60", "step:60,min:60", "step:600,min:600", "step:3600,min:3600"};
  PredictorOptions popt;
  popt.samples = 200;
  popt.bootstrap = 50;
  popt.particles = 2000;
  int searched = 0, probes = 0, several = 0, budget_stops = 0;
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    CAPTURE(seed);
    const TraceCase c = generated_case(seed + 7000000);
    REQUIRE(c.rows.size() >= 50);
    REQUIRE(c.rows.size() <= 70);
    auto rule = parse_rule(rules[seed % 4]);
    REQUIRE(rule);
    const double runs = seed % 2 ? 100 : 10;
    const Total t = replay_total(c, *rule, runs, 0, popt);
    CAPTURE(t.stop_reason);
    REQUIRE(t.ok);
    ++searched;
    probes += t.probes;
    several += t.probes > 1;
    budget_stops += t.stop_reason.starts_with("the exploration budget is spent");
    CHECK(t.budget_kept);
    CHECK(t.total_kept);
    CHECK_FALSE(t.blind);
    CHECK(t.regret >= 0);
  }
  CHECK(searched == 1000);
  // The searches did search: most probed more than once, and some ran into their budget.
  CHECK(several > 500);
  CHECK(budget_stops > 0);
  MESSAGE("1,000 searches, " << probes << " probes, " << several << " with more than one, " << budget_stops
                             << " stopped by the budget");
}

TEST_CASE("generated tables have the traces' shape") {
  int cliffs = 0, timeouts = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const TraceCase c = generated_case(seed);
    std::set<std::string> families;
    int failed = 0;
    for (const auto& r : c.rows) families.insert(r.cand.cfg.cpu_family), failed += !r.completed;
    CHECK(families.size() >= 3);
    CHECK(families.size() <= 8);
    timeouts += failed > 0;
    // A memory cliff shows as a smaller config of a family that needs over twice the core-seconds of a larger one.
    for (const auto& a : c.rows)
      for (const auto& b : c.rows)
        if (a.completed && b.completed && a.cand.cfg.cpu_family == b.cand.cfg.cpu_family &&
            a.cand.cfg.cores * a.cand.cfg.nodes < b.cand.cfg.cores * b.cand.cfg.nodes &&
            a.runtime * a.cand.cfg.cores * a.cand.cfg.nodes > 2 * b.runtime * b.cand.cfg.cores * b.cand.cfg.nodes) {
          ++cliffs;
          goto next;
        }
  next:;
  }
  CHECK(timeouts > 50);
  CHECK(cliffs > 0);
}
