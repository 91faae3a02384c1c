#include <doctest/doctest.h>

#include <cmath>

#include "billing/planner.h"
#include "billing/prices/rule_book.h"
#include "tests/support/billing_rule.h"

using namespace tsum::billing;
using tsum::billing::testing::rule;

namespace {

ConfigSpec local(int cores) {
  ConfigSpec c;
  c.config = "local-" + std::to_string(cores) + "c";
  c.provider = "local";
  c.instance_type = c.config;
  c.cores = cores;
  return c;
}

// Runs whose phases are exactly: startup 10, install 20, load_data 30, start 5, learn L, verify 6, save 4, poweroff 5.
MeasuredRun run(const ConfigSpec& c, double learn) {
  MeasuredRun r;
  r.cfg = c;
  r.phases = {10, 20, 30, 5, learn, 6, 4, 5};
  return r;
}


PlanCandidate cand(const ConfigSpec& c, double price, const char* rule_name) { return {c, price, "USD", rule(rule_name)}; }

Plan plan(const std::vector<MeasuredRun>& history, const std::vector<PlanCandidate>& cands, PlanRequest req = {}) {
  auto p = Predictor::learn(history, {2, 0});
  REQUIRE(p.ok());
  auto out = make_plan(*p, cands, req);
  REQUIRE(out.ok());
  return *out;
}

}  // namespace

TEST_CASE("expected cost is taken over the t_sum distribution, not at its mean, near a step") {
  // t_sum is about 3550 s with a few percent spread: billed(E[t]) would be 1 h, but a share of runs go over.
  auto c = local(1);
  std::vector<MeasuredRun> h = {run(c, 3470), run(c, 3400), run(c, 3540)};
  auto p = Predictor::learn(h, {});
  REQUIRE(p.ok());
  auto pred = p->predict(c);
  REQUIRE(pred.ok());
  double over = 0;
  for (double t : pred->t_sum) over += t > 3600;
  over /= static_cast<double>(pred->t_sum.size());
  REQUIRE(pred->t_mean() < 3600);
  REQUIRE(over > 0.05);
  auto pl = make_plan(*p, std::vector{cand(c, 1.0, "per_hour")}, {});
  REQUIRE(pl.ok());
  const auto& e = pl->ranked[0];
  CHECK(billed_seconds(rule("per_hour"), e.t_mean) == 3600);
  CHECK(e.billed_s == doctest::Approx(3600 + 3600 * over));
  CHECK(e.cost == doctest::Approx(1.0 + over));
  CHECK(e.t_p10 < e.t_mean);
  CHECK(e.t_p90 > e.t_mean);
}

TEST_CASE("with two runs the straddle is priced over a normal model of t_sum") {
  auto c = local(1);
  std::vector<MeasuredRun> h = {run(c, 3440), run(c, 3500)};  // t_sum 3520 and 3580
  auto p = Predictor::learn(h, {});
  REQUIRE(p.ok());
  auto pred = p->predict(c);
  REQUIRE(pred.ok());
  double over = 0;
  for (double t : pred->t_sum) over += t > 3600;
  over /= static_cast<double>(pred->t_sum.size());
  CHECK(over > 0.1);  // both runs stayed under the hour, but a normal with their spread does not
  CHECK(over < 0.5);
  auto pl = make_plan(*p, std::vector{cand(c, 2.0, "per_hour")}, {});
  REQUIRE(pl.ok());
  CHECK(pl->ranked[0].cost == doctest::Approx(2.0 * (1 + over)));
  CHECK(pl->ranked[0].cost > 2.0 * 1.1);  // billed(E[t]) would say exactly 2.0
}

TEST_CASE("per_hour: both bill 1 h, so the half-price machine wins") {
  auto one = local(1), two = local(2);
  std::vector<MeasuredRun> h = {run(one, 1500), run(one, 1510), run(two, 800), run(two, 790)};
  auto pl = plan(h, {cand(two, 0.085, "per_hour"), cand(one, 0.0425, "per_hour")});
  REQUIRE(pl.ranked.size() == 2);
  CHECK(pl.ranked[0].candidate.cfg.config == "local-1c");
  CHECK(pl.ranked[0].billed_s == 3600);
  CHECK(pl.ranked[0].reason == "per_hour: both bill 1 h; local-1c is half the price");
  CHECK(pl.ranked[0].p_best == 1.0);
  CHECK(pl.ranked[1].reason.find("2.00x the cost of local-1c") != std::string::npos);
  // Under per-second billing the faster machine costs about the same, and 1c is still a bit cheaper.
  auto ps = plan(h, {cand(two, 0.085, "per_second_60s_min"), cand(one, 0.0425, "per_second_60s_min")});
  CHECK(ps.ranked[0].candidate.cfg.config == "local-1c");
  CHECK(ps.ranked[0].cost < ps.ranked[1].cost);
}

TEST_CASE("ties in cost break toward less time") {
  auto a = local(2), b = local(4);
  std::vector<MeasuredRun> h = {run(a, 1500), run(a, 1520), run(b, 700), run(b, 710)};
  // Same price, both bill exactly one hour: the same cost on every draw.
  auto pl = plan(h, {cand(a, 0.2, "per_hour"), cand(b, 0.2, "per_hour")});
  CHECK(pl.ranked[0].cost == pl.ranked[1].cost);
  CHECK(pl.ranked[0].candidate.cfg.config == "local-4c");
  CHECK(pl.ranked[0].reason.find("ties local-2c on cost") != std::string::npos);
  CHECK(pl.ranked[1].reason.find("same cost as local-4c but slower") != std::string::npos);
  CHECK(pl.ranked[0].p_best == 1.0);
}

TEST_CASE("packing pays startup, install, load_data and poweroff once and fills the paid hour") {
  auto c = local(4);
  std::vector<MeasuredRun> h = {run(c, 600), run(c, 600), run(c, 600)};
  PlanRequest req;
  req.repetitions = 3;
  auto pl = plan(h, {cand(c, 1.0, "per_hour")}, req);
  REQUIRE(pl.ranked.size() == 2);
  const PlanEntry* fresh = nullptr;
  const PlanEntry* packed = nullptr;
  for (const auto& e : pl.ranked) (e.packing == Packing::fresh ? fresh : packed) = &e;
  REQUIRE(fresh);
  REQUIRE(packed);
  // Fresh: three instances, each ~680 s, each billed a full hour.
  CHECK(fresh->billed_s == doctest::Approx(3 * 3600));
  CHECK(fresh->t_mean == doctest::Approx(680).epsilon(0.05));
  // Packed: 10+20+30+5 once, then 3 x (5+600+6+4) = 1910 s, one hour.
  CHECK(packed->t_mean == doctest::Approx(65 + 3 * 615).epsilon(0.03));
  CHECK(packed->billed_s == doctest::Approx(3600));
  CHECK(pl.ranked[0].packing == Packing::packed);
  CHECK(pl.ranked[0].label() == "local-4c (packed)");
  // Room left in that hour at the 90th percentile: (3600 - ~1930) / 615 s per repetition = 2 more for free.
  CHECK(packed->free_repetitions == 2);
  for (int ph = 0; ph < 8; ++ph)
    CHECK(paid_once_when_packed(ph) == (ph == kStartup || ph == kInstall || ph == kLoadData || ph == kPoweroff));
  auto j = plan_to_json(pl);
  CHECK(j["packed_pays_once"] == nlohmann::json({"startup", "install", "load_data", "poweroff"}));
  // A single run: free repetitions of ~680 s and epochs of ~300 s (2 epochs) in the rest of its hour.
  auto single = plan(h, {cand(c, 1.0, "per_hour")});
  CHECK(single.ranked.size() == 1);
  CHECK(single.ranked[0].free_repetitions == 4);
  CHECK(single.ranked[0].free_epochs == 9);
}

TEST_CASE("the other objectives: time, cost under a deadline, budget") {
  auto one = local(1), four = local(4), eight = local(8);
  std::vector<MeasuredRun> h = {run(one, 2400), run(one, 2420), run(four, 700), run(four, 690),
                                run(eight, 420), run(eight, 415)};
  std::vector<PlanCandidate> cands = {cand(one, 0.05, "per_second_60s_min"), cand(four, 0.2, "per_second_60s_min"),
                                      cand(eight, 0.4, "per_second_60s_min")};
  PlanRequest time_req;
  time_req.objective = Objective::time;
  CHECK(plan(h, cands, time_req).ranked[0].candidate.cfg.config == "local-8c");

  PlanRequest deadline;
  deadline.objective = Objective::cost_under_deadline;
  deadline.deadline_s = 1200;
  auto d = plan(h, cands, deadline);
  CHECK(d.ranked[0].candidate.cfg.config == "local-4c");  // 1c is cheapest but misses 1200 s
  CHECK(d.ranked[0].p_deadline >= 0.9);
  // The pick says how likely it meets the deadline and where the spread behind that comes from: here three
  // configs run twice each.
  CHECK(d.ranked[0].reason.find("P(t_sum <= 1200 s) = ") != std::string::npos);
  CHECK(d.ranked[0].reason.find("learned from 3 configs run more than once") != std::string::npos);
  CHECK(plan_to_json(d)["spread"].get<std::string>().find("run-to-run cv") == 0);
  auto once = plan({run(one, 2400), run(four, 700), run(eight, 420)}, cands, deadline);
  CHECK(once.spread.find("a prior run-to-run cv of 2.0%") == 0);
  CHECK_FALSE(d.ranked.back().feasible);
  CHECK(d.ranked.back().reason.find("misses the deadline") != std::string::npos);

  PlanRequest budget;
  budget.objective = Objective::budget;
  budget.budget = 0.045;
  auto b = plan(h, cands, budget);
  CHECK(b.ranked[0].candidate.cfg.config == "local-4c");  // 8c is faster but costs ~0.054
  CHECK(b.ranked[0].feasible);
  CHECK_FALSE(b.ranked[2].feasible);
  CHECK(b.ranked[2].reason.find("over budget") != std::string::npos);
}

TEST_CASE("plan requests are checked") {
  auto c = local(1);
  std::vector<MeasuredRun> h = {run(c, 100)};
  auto p = Predictor::learn(h, {});
  REQUIRE(p.ok());
  std::vector<PlanCandidate> cands = {cand(c, 1, "per_hour")};
  PlanRequest r;
  r.objective = Objective::cost_under_deadline;
  CHECK_FALSE(make_plan(*p, cands, r).ok());
  r.objective = Objective::budget;
  CHECK_FALSE(make_plan(*p, cands, r).ok());
  PlanRequest reps;
  reps.repetitions = 0;
  CHECK_FALSE(make_plan(*p, cands, reps).ok());
  CHECK_FALSE(make_plan(*p, {}, {}).ok());
  auto rub = cands;
  rub.push_back({local(2), 5, "RUB", rule("per_hour")});
  rub.back().cfg.config = "other";
  auto mixed = make_plan(*p, rub, {});
  REQUIRE_FALSE(mixed.ok());
  CHECK(mixed.error().detail.find("one currency") != std::string::npos);
  // A candidate nothing can predict is listed, not ranked.
  ConfigSpec gpu = local(8);
  gpu.config = "gpu";
  gpu.gpus = 1;
  gpu.gpu_type = "T4";
  auto partly = make_plan(*p, std::vector{cands[0], cand(gpu, 1, "per_hour")}, {});
  REQUIRE(partly.ok());
  CHECK(partly->ranked.size() == 1);
  REQUIRE(partly->unpredictable.size() == 1);
  CHECK(partly->unpredictable[0].first == "gpu");
  CHECK(parse_objective("cheapest").error().detail.find("cost, time") != std::string::npos);
}

TEST_CASE("catalog offers become candidates with their provider's rule and their monthly cap") {
  auto hz = parse_catalog(tsum::find_embedded(embedded_catalogs(), "hetzner.json"));
  REQUIRE(hz.ok());
  auto c = candidate_from_offer(*hz, *hz->find("ccx13"));
  REQUIRE(c.ok());
  CHECK(c->cfg.config == "hetzner/ccx13");
  CHECK(c->cfg.cores == 2);
  CHECK(c->currency == "EUR");
  CHECK(c->rule.name == "hetzner");
  CHECK(*c->rule.cap_hours == doctest::Approx(12.49 / 0.020));
  auto gce = parse_catalog(tsum::find_embedded(embedded_catalogs(), "gce.json"));
  REQUIRE(gce.ok());
  const auto* v100 = gce->find("n1-standard-8+1xV100");
  auto spot = candidate_from_offer(*gce, *v100, {}, true);
  REQUIRE(spot.ok());
  CHECK(spot->hourly_price == *v100->spot_hourly);
  CHECK(spot->cfg.gpu_type == "V100");
  CHECK(spot->rule.name == "gce");
  auto aws = parse_catalog(tsum::find_embedded(embedded_catalogs(), "aws.json"));
  REQUIRE(aws.ok());
  CHECK_FALSE(candidate_from_offer(*aws, *aws->find("c6i.large"), {}, true).ok());  // no spot price listed
  auto local = parse_catalog(tsum::find_embedded(embedded_catalogs(), "local.json"));
  REQUIRE(local.ok());
  CHECK(candidate_from_offer(*local, local->offers[0])->rule.name == "per_second_60s_min");
  auto user = parse_rules(R"({"rules": [{"name": "my_local", "provider": "local", "step_s": 60, "source": "me", "as_of": "2026-01-01"}]})");
  REQUIRE(user.ok());
  CHECK(candidate_from_offer(*local, local->offers[0], *user)->rule.name == "my_local");
}

namespace {

// A spot twin of `c`: its own config id, predicted from c's runs, under `m`.
PlanCandidate spot_of(const ConfigSpec& c, double price, const char* rule_name, SpotModel m) {
  PlanCandidate s = cand(c, price, rule_name);
  s.cfg.config += "/spot";
  s.predict_as = c.config;
  s.spot = m;
  return s;
}

const PlanEntry& entry(const Plan& p, const std::string& config) {
  for (const auto& e : p.ranked)
    if (e.candidate.cfg.config == config) return e;
  FAIL("no entry " << config);
  return p.ranked.front();
}

}  // namespace

TEST_CASE("spot: the interruption rate moves from the prior toward what was measured") {
  auto prior = estimate_spot_rate(0, 0, 0.05);
  CHECK(prior.rate_per_hour == doctest::Approx(0.05));
  CHECK(prior.basis.find("prior") == 0);
  auto few = estimate_spot_rate(2, 0.5, 0.05);  // 2 in half an hour, the prior worth one hour
  CHECK(few.rate_per_hour == doctest::Approx((0.05 + 2) / 1.5));
  CHECK(few.basis.find("measured: 2 interruptions in 0.5 spot machine-hours") == 0);
  auto many = estimate_spot_rate(10, 1000, 0.05);  // 0.01/h over a thousand hours: the data wins
  CHECK(many.rate_per_hour == doctest::Approx(0.01).epsilon(0.01));
}

TEST_CASE("spot: a candidate never interrupted costs its price; interruptions add time, redone learning and "
          "restarts, and a high enough rate ranks on-demand first, with the reason") {
  auto c = local(2);
  c.provider = "gce";
  std::vector<MeasuredRun> h = {run(c, 3000), run(c, 3100), run(c, 3050)};  // t_sum about an hour
  SpotModel calm{.rate_per_hour = 0, .rate_basis = "prior: 0/h", .checkpoint_every_s = 300, .on_demand_price = 1.0};
  auto quiet = plan(h, {cand(c, 1.0, "per_second_60s_min"), spot_of(c, 0.3, "per_second_60s_min", calm)});
  const auto& q = entry(quiet, c.config + "/spot");
  CHECK(quiet.ranked[0].candidate.cfg.config == c.config + "/spot");
  CHECK(q.cost == doctest::Approx(0.3 * entry(quiet, c.config).cost));  // same machine time, 30 % of the price
  CHECK(q.t_mean == doctest::Approx(entry(quiet, c.config).t_mean));
  CHECK(q.interruptions == 0);
  CHECK(q.reason.find("spot at") != std::string::npos);
  CHECK(plan_to_json(quiet)["ranked"][0]["market"] == "spot");
  CHECK(plan_to_json(quiet)["ranked"][0]["interruptions"]["expected"] == 0);

  // Two an hour, each redoing up to 5 minutes of learning and paying a 10-minute restart.
  SpotModel stormy = calm;
  stormy.rate_per_hour = 2;
  stormy.restart_s = 600;
  stormy.max_interruptions = 100;
  auto rough = plan(h, {cand(c, 1.0, "per_second_60s_min"), spot_of(c, 0.3, "per_second_60s_min", stormy)});
  const auto& r = entry(rough, c.config + "/spot");
  CHECK(r.interruptions > 1.5);
  CHECK(r.lost_s > 0);
  CHECK(r.lost_s < r.interruptions * 300);
  CHECK(r.restart_s > 0);
  CHECK(r.t_mean > q.t_mean + 0.5 * (r.lost_s + r.restart_s));
  CHECK(r.cost > q.cost);
  CHECK(r.p_fail == 0);
  // At 0.9 of the price, the interruptions make spot dearer than on-demand.
  auto dear = plan(h, {cand(c, 1.0, "per_second_60s_min"), spot_of(c, 0.9, "per_second_60s_min", stormy)});
  CHECK(dear.ranked[0].candidate.cfg.config == c.config);
  CHECK(entry(dear, c.config + "/spot").reason.find("interruptions expected") != std::string::npos);
  // Time: on-demand is faster whatever the price.
  PlanRequest fastest;
  fastest.objective = Objective::time;
  CHECK(plan(h, {cand(c, 1.0, "per_second_60s_min"), spot_of(c, 0.1, "per_second_60s_min", stormy)}, fastest)
            .ranked[0].candidate.cfg.config == c.config);
}

TEST_CASE("spot: a deadline's probability counts the interruptions, failures miss it, and on-demand after N "
          "bounds the damage") {
  auto c = local(2);
  std::vector<MeasuredRun> h = {run(c, 3000), run(c, 3100), run(c, 3050)};
  PlanRequest req;
  req.objective = Objective::cost_under_deadline;
  req.deadline_s = 3600;
  SpotModel m{.rate_per_hour = 1, .rate_basis = "test", .checkpoint_every_s = 600, .restart_s = 300,
              .max_interruptions = 100, .on_demand_price = 1.0};
  auto p = plan(h, {cand(c, 1.0, "per_second_60s_min"), spot_of(c, 0.3, "per_second_60s_min", m)}, req);
  const auto& spot = entry(p, c.config + "/spot");
  const auto& od = entry(p, c.config);
  CHECK(od.p_deadline == doctest::Approx(1.0));
  // P(no interruption in its ~3130 s) = exp(-3130/3600) ~ 0.42; one interrupted in its first few minutes may
  // still make it (a 300 s restart, little learning redone); later ones miss an hour's deadline.
  CHECK(spot.p_deadline > 0.38);
  CHECK(spot.p_deadline < 0.6);
  CHECK_FALSE(spot.feasible);
  CHECK(p.ranked[0].candidate.cfg.config == c.config);
  CHECK(plan_to_json(p)["ranked"][1]["p_deadline"].get<double>() == doctest::Approx(spot.p_deadline));

  // No interruption allowed: an interrupted draw is a failed run.
  SpotModel strict = m;
  strict.max_interruptions = 0;
  auto s = plan(h, {spot_of(c, 0.3, "per_second_60s_min", strict)}, req);
  CHECK(s.ranked[0].p_fail == doctest::Approx(1 - s.ranked[0].p_deadline).epsilon(0.02));
  CHECK(s.ranked[0].reason.find("fails in") != std::string::npos);

  // On-demand after the first interruption: at most one restart, priced at the on-demand rate after it.
  SpotModel once = m;
  once.on_demand_after = 1;
  auto o = plan(h, {spot_of(c, 0.3, "per_second_60s_min", once)});
  CHECK(o.ranked[0].interruptions <= 1.0);
  CHECK(o.ranked[0].interruptions > 0.4);
  CHECK(o.ranked[0].p_fail == 0);
}

TEST_CASE("spot: AWS charges nothing for a machine it takes back within its first hour") {
  auto c = local(2);
  std::vector<MeasuredRun> h = {run(c, 1000), run(c, 1050), run(c, 1100)};
  SpotModel m{.rate_per_hour = 3, .rate_basis = "test", .checkpoint_every_s = 60, .restart_s = 60,
              .max_interruptions = 1000, .on_demand_price = 1.0};
  SpotModel aws = m;
  aws.free_first_hour = true;
  auto paid = plan(h, {spot_of(c, 0.3, "per_second_60s_min", m)});
  auto free = plan(h, {spot_of(c, 0.3, "per_second_60s_min", aws)});
  CHECK(free.ranked[0].interruptions == doctest::Approx(paid.ranked[0].interruptions));
  CHECK(free.ranked[0].t_mean == doctest::Approx(paid.ranked[0].t_mean));
  CHECK(free.ranked[0].cost < paid.ranked[0].cost);
  // Only the last machine, the one that finished, is paid: its run from the restart on.
  CHECK(free.ranked[0].billed_s < paid.ranked[0].billed_s);
  CHECK(free.ranked[0].reason.find("within its first hour is free") != std::string::npos);
  // An invalid model is refused.
  SpotModel bad = m;
  bad.checkpoint_every_s = 0;
  auto p = Predictor::learn(h, {2, 0});
  REQUIRE(p.ok());
  CHECK_FALSE(make_plan(*p, std::vector{spot_of(c, 0.3, "per_second_60s_min", bad)}, {}).ok());
}
