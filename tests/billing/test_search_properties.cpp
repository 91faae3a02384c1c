// Property tests of the search's spending on 1,000 generated tables of the published traces' shape
// (bench/trace_replay.h: 50-70 configs in 3-8 families of 1-5 node clusters, memory cliffs, runs that time out,
// single noisy runs with stragglers), each searched from nothing with the default budget under one of four
// billing rules and 10 or 100 planned runs:
//  - the budget holds: no probe starts unless the spend so far plus its p90 fits the budget of its round, and no
//    probe, however slow, takes the spend past that budget (it is stopped at the limit it was given);
//  - the user never pays more in all (the probes plus the planned runs on the pick) than running every planned
//    run on the first probe, plus the budget;
//  - the budget is a budget: fixed when the first measurement comes in, it never changes after, and never falls
//    below what the search has spent;
//  - no blind pick: the recommendation never costs more than 5% over the best config the search measured, also
//    when max_probes (1, 2 or 3, with a probe budget that never binds) stops it;
//  - a probe stopped where it could no longer beat the best config measured before it cost at most that config's
//    run, and its own config was indeed no cheaper: stopping it lost nothing;
//  - a search stops on its budget only where no probe that fits it is worth its cost: its stop reason names the
//    affordable probe worth most, saving at most its cost, or says that none fits;
//  - on tables whose job's working set lies above every cheap small cluster (bench/trace_replay.h cliff_case),
//    with the memory an agent reports, a search looks past the memory it probed before it stops.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <set>

#include "trace_replay.h"

using namespace tsum::billing;
using namespace tsum::bench;

namespace {

// Fewer draws and particles than the daemon's: a thousand searches in a few minutes.
PredictorOptions light_predictor() {
  PredictorOptions p;
  p.samples = 200;
  p.bootstrap = 50;
  p.particles = 2000;
  return p;
}

}  // namespace

TEST_CASE("on 1,000 generated tables the budget holds, the total never exceeds the first probe's plus the budget, "
          "no pick is blind, no probe stopped early lost anything, and no budget stop left a probe worth its cost") {
  const char* rules[] = {"step:1,min:60", "step:60,min:60", "step:600,min:600", "step:3600,min:3600"};
  const PredictorOptions popt = light_predictor();
  int searched = 0, probes = 0, several = 0, budget_stops = 0, affordable_named = 0, stopped_early = 0;
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
    affordable_named += t.stop_reason.find("; the affordable probe worth most, ") != std::string::npos;
    CHECK(t.budget_stop_kept);  // no stop on the budget while a probe that fits it is worth its cost
    CHECK(t.budget_kept);
    CHECK(t.budget_fixed);
    CHECK(t.total_kept);
    CHECK_FALSE(t.blind);
    CHECK(t.regret >= 0);
    CHECK(t.stops_kept);
    stopped_early += t.stopped_early;
  }
  CHECK(searched == 1000);
  // The searches did search: most probed more than once, and some ran into their budget.
  CHECK(several > 500);
  CHECK(budget_stops > 0);
  CHECK(affordable_named > 0);
  CHECK(stopped_early > 0);
  MESSAGE("1,000 searches, " << probes << " probes, " << several << " with more than one, " << budget_stops
                             << " stopped by the budget (" << affordable_named
                             << " naming an affordable probe not worth its cost), " << stopped_early
                             << " probes stopped early");
}

TEST_CASE("on 300 generated tables, a search stopped by max_probes recommends no config dearer than the best it "
          "measured") {
  const PredictorOptions popt = light_predictor();
  int predicted_best_probed = 0;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    CAPTURE(seed);
    const TraceCase c = generated_case(seed + 8000000);
    auto rule = parse_rule(seed % 2 ? "step:1,min:60" : "step:3600,min:3600");
    REQUIRE(rule);
    const int k = 1 + static_cast<int>(seed % 3);
    CAPTURE(k);
    const Total t = replay_total(c, *rule, 100, k, popt, 1e9);
    CAPTURE(t.error);
    if (!t.ok) {  // its probes all ran into timed-out rows: it says so, and recommends nothing
      CHECK(t.error.starts_with("search: nothing was measured"));
      continue;
    }
    CHECK(t.probes <= k);
    CHECK_FALSE(t.blind);
    CHECK(t.budget_fixed);
    predicted_best_probed += t.probes_text.find("the last probe measures the predicted pick") != std::string::npos;
  }
  CHECK(predicted_best_probed > 0);  // the last probe went to the predicted best, which was then measured
}

TEST_CASE("on 40 tables no model explains, searches doubt their model and explore without it, within budget and "
          "recommending only what they measured") {
  const PredictorOptions popt = light_predictor();
  int doubted = 0, explored = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    CAPTURE(seed);
    // A generated table whose runtimes are then scattered over two orders of magnitude, config by config.
    TraceCase c = generated_case(seed + 9000000);
    std::mt19937_64 rng(seed);
    for (auto& r : c.rows) r.runtime *= std::exp(std::uniform_real_distribution<double>(-2.3, 2.3)(rng));
    auto rule = parse_rule("step:1,min:60");
    REQUIRE(rule);
    const Total t = replay_total(c, *rule, 1000, 0, popt);
    REQUIRE(t.ok);
    CHECK(t.budget_kept);
    CHECK(t.budget_fixed);
    CHECK(t.total_kept);
    CHECK_FALSE(t.blind);
    doubted += t.doubted;
    explored += t.doubted && t.free_probes > 0;
    if (t.doubted) CHECK(t.probes_text.find("explore without the model") != std::string::npos);
  }
  MESSAGE(doubted << " of 40 searches doubted their model; " << explored << " explored without it");
  CHECK(doubted > 0);
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

TEST_CASE("on 100 tables whose working set lies above the clusters probed first, a search probes past it before it "
          "stops, as far as its budget allows") {
  const char* rules[] = {"step:1,min:60", "step:60,min:60", "step:600,min:600", "step:3600,min:3600"};
  const PredictorOptions popt = light_predictor();
  int above = 0, searched = 0;
  for (uint64_t seed = 0; seed < 100; ++seed) {
    CAPTURE(seed);
    TraceCase c = cliff_case(seed + 9000000);
    c.sampled = true;
    REQUIRE(c.working_set_gib > 0);
    auto rule = parse_rule(rules[seed % 4]);
    REQUIRE(rule);
    const Total t = replay_total(c, *rule, 100, 0, popt);
    CAPTURE(t.stop_reason);
    CAPTURE(t.probes_text);
    REQUIRE(t.ok);
    ++searched;
    above += t.probed_above_working_set;
    // One that never reached the working set did not stop before it looked past the memory it had probed: it
    // says that no config with more memory fitted what was left of its budget.
    if (!t.probed_above_working_set)
      CHECK(t.stop_reason.find("no config with more fits the") != std::string::npos);
  }
  CHECK(searched == 100);
  CHECK(above >= 90);
  MESSAGE(above << " of 100 searches probed a cluster that holds the working set");
}
