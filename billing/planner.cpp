#include "billing/planner.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "billing/plan_explain.h"
#include "billing/prices/rule_book.h"

namespace tsum::billing {

using nlohmann::json;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Evaluated {
  PlanEntry entry;
  std::vector<double> cost;  // per Monte Carlo draw
  std::vector<double> time;
  std::vector<char> failed;  // a spot plan interrupted more than it may be
};

// One machine's job under a SpotModel (see planner.h): `pre` seconds to learning, `work` seconds of
// checkpointed work, `post` seconds after it.
struct SpotDraw {
  double wall = 0, billed = 0, cost = 0, lost = 0, restart = 0;
  int interruptions = 0;
  bool failed = false;
};

SpotDraw simulate_spot(const SpotModel& m, const PlanCandidate& c, double pre, double work, double post,
                       std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0, 1);
  SpotDraw d;
  double remaining = work;
  for (;;) {
    const bool on_demand = m.on_demand_after > 0 && d.interruptions >= m.on_demand_after;
    const bool moved = d.interruptions > 0;  // on the offer the recovery policy picks
    const double spot_price = moved && m.recovery_price > 0 ? m.recovery_price : c.hourly_price;
    const double rate = moved && m.recovery_rate >= 0 ? m.recovery_rate : m.rate_per_hour;
    const double price = on_demand ? m.on_demand_price : spot_price;
    const double boot = d.interruptions == 0 ? pre : m.restart_s.value_or(pre);
    const double need = boot + remaining + post;
    const double per_s = on_demand ? 0 : rate / 3600;
    const double up = per_s > 0 ? -std::log1p(-unit(rng)) / per_s : kInf;  // until the cloud takes it back
    if (d.interruptions > 0) d.restart += std::min(up, boot);
    if (up >= need) {
      const double billed = expected_billed_seconds(c.rule, need);
      d.wall += need, d.billed += billed, d.cost += price * billed / 3600;
      return d;
    }
    const double billed = m.free_first_hour && up < 3600 ? 0 : expected_billed_seconds(c.rule, up);
    d.wall += up, d.billed += billed, d.cost += price * billed / 3600;
    ++d.interruptions;
    if (up > boot) {
      const double learned = std::min(up - boot, remaining);
      const double lost = std::min(learned, unit(rng) * m.checkpoint_every_s);
      remaining -= learned - lost;
      d.lost += lost;
    }
    if (d.interruptions > m.max_interruptions) {  // failed: what it spent, and the run again on on-demand
      const double again = pre + work + post, billed_again = expected_billed_seconds(c.rule, again);
      d.wall += again, d.billed += billed_again, d.cost += m.on_demand_price * billed_again / 3600;
      d.failed = true;
      return d;
    }
  }
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  double pos = q * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(v.size() - 1, lo + 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

bool near(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b)) + 1e-12; }

// Sample indices: repetition 0 uses draw i itself, later repetitions a fixed random shift of it, so each
// repetition is an independent run while the draws stay paired across entries.
std::vector<size_t> shifts(int repetitions, size_t draws, uint64_t seed, const std::string& config) {
  std::mt19937_64 rng(seed ^ std::hash<std::string>{}(config));
  std::uniform_int_distribution<size_t> pick(1, std::max<size_t>(1, draws - 1));
  std::vector<size_t> out{0};
  for (int r = 1; r < repetitions; ++r) out.push_back(pick(rng));
  return out;
}

Evaluated evaluate(const Prediction& p, const PlanCandidate& c, Packing packing, const PlanRequest& req) {
  const size_t draws = p.t_sum.size();
  const int reps = req.repetitions;
  const auto shift = shifts(reps, draws, req.seed, c.cfg.config);
  Evaluated ev;
  ev.cost.resize(draws);
  ev.time.resize(draws);
  ev.failed.assign(draws, 0);
  std::vector<double> billed(draws), instance_t(draws);
  std::mt19937_64 rng(req.seed ^ std::hash<std::string>{}(c.cfg.config + "/interruptions"));
  double interruptions = 0, lost = 0, restart = 0, failed = 0;
  // A spot machine's job: interrupted and resumed per c.spot; the draw's cost, wall time and what it lost.
  auto on_spot = [&](size_t i, double pre, double work, double post, double& cost, double& bill) {
    auto d = simulate_spot(*c.spot, c, pre, work, post, rng);
    cost += d.cost, bill += d.billed, interruptions += d.interruptions, lost += d.lost, restart += d.restart;
    if (d.failed && !ev.failed[i]) ev.failed[i] = 1, ++failed;
    return d.wall;
  };
  for (size_t i = 0; i < draws; ++i) {
    double cost = 0, bill = 0, wall = 0;
    if (packing == Packing::fresh) {
      for (int r = 0; r < reps; ++r) {
        const size_t j = (i + shift[r]) % draws;
        double t = p.t_sum[j];
        if (c.spot) {
          const double pre = p.phases[kStartup][j] + p.phases[kInstall][j] + p.phases[kLoadData][j] + p.phases[kStart][j];
          t = on_spot(i, pre, p.phases[kLearn][j], p.t_sum[j] - pre - p.phases[kLearn][j], cost, bill);
        } else {
          bill += expected_billed_seconds(c.rule, t);
        }
        wall = std::max(wall, t);
      }
      instance_t[i] = p.t_sum[i];
    } else {
      for (int ph = 0; ph < 8; ++ph) {
        if (paid_once_when_packed(ph)) wall += p.phases[ph][i];
        else
          for (int r = 0; r < reps; ++r) wall += p.phases[ph][(i + shift[r]) % draws];
      }
      instance_t[i] = wall;
      if (c.spot) {  // one machine: everything between its setup and its poweroff is work a restart resumes
        const double pre = p.phases[kStartup][i] + p.phases[kInstall][i] + p.phases[kLoadData][i];
        wall = on_spot(i, pre, wall - pre - p.phases[kPoweroff][i], p.phases[kPoweroff][i], cost, bill);
      } else {
        bill = expected_billed_seconds(c.rule, wall);
      }
    }
    if (!c.spot) cost = c.hourly_price * bill / 3600.0;
    ev.cost[i] = cost;
    ev.time[i] = wall;
    billed[i] = bill;
  }
  PlanEntry& e = ev.entry;
  const double n = static_cast<double>(draws);
  e.interruptions = interruptions / n;
  e.lost_s = lost / n;
  e.restart_s = restart / n;
  e.p_fail = failed / n;
  e.candidate = c;
  e.packing = packing;
  e.repetitions = reps;
  for (int ph = 0; ph < 8; ++ph) e.phases[ph] = p.mean(ph);
  e.t_mean = mean(ev.time);
  e.t_p10 = quantile(ev.time, 0.1);
  e.t_p90 = quantile(ev.time, 0.9);
  e.billed_s = mean(billed);
  e.cost = mean(ev.cost);
  e.basis = p.basis;
  e.overhead_basis = p.overhead_basis;
  e.runs = p.runs;
  // Free room: the slack left in the last billed step of one instance, at its 90th-percentile time.
  double t90 = quantile(instance_t, 0.9);
  double slack = std::max(0.0, expected_billed_seconds(c.rule, t90) - t90);
  double per_rep = e.phases[kStart] + e.phases[kLearn] + e.phases[kVerify] + e.phases[kSave];
  e.free_repetitions = per_rep > 0 ? static_cast<int>(std::floor(slack / per_rep)) : 0;
  e.free_epochs = p.epoch_s > 0 ? static_cast<int>(std::floor(slack / p.epoch_s)) : 0;
  return ev;
}

void judge(Evaluated& ev, const PlanRequest& req) {
  auto& e = ev.entry;
  if (req.deadline_s) {
    size_t ok = 0;
    for (size_t i = 0; i < ev.time.size(); ++i) ok += ev.time[i] <= *req.deadline_s && !ev.failed[i];
    e.p_deadline = static_cast<double>(ok) / static_cast<double>(ev.time.size());
  }
  if (req.objective == Objective::cost_under_deadline) e.feasible = e.p_deadline >= req.deadline_confidence;
  if (req.objective == Objective::budget) e.feasible = e.cost <= *req.budget * (1 + 1e-12);
}

// (primary, secondary) for ranking; lower is better.
std::pair<double, double> keys(const PlanEntry& e, Objective o) {
  switch (o) {
    case Objective::cost: return {e.cost, e.t_mean};
    case Objective::time: return {e.t_mean, e.cost};
    case Objective::cost_under_deadline: return e.feasible ? std::pair{e.cost, e.t_mean} : std::pair{-e.p_deadline, e.cost};
    case Objective::budget: return e.feasible ? std::pair{e.t_mean, e.cost} : std::pair{e.cost, e.t_mean};
  }
  return {0, 0};
}

bool better(const PlanEntry& a, const PlanEntry& b, Objective o) {
  if (a.feasible != b.feasible) return a.feasible;
  auto [a1, a2] = keys(a, o);
  auto [b1, b2] = keys(b, o);
  if (!near(a1, b1)) return a1 < b1;
  if (!near(a2, b2)) return a2 < b2;
  return a.label() < b.label();
}

// Per draw: the entry with the best value (ties broken like the ranking) gets the draw.
void share_of_best(std::vector<Evaluated>& all, const PlanRequest& req) {
  const size_t draws = all.front().cost.size();
  std::vector<int> wins(all.size(), 0);
  for (size_t i = 0; i < draws; ++i) {
    int best = -1;
    std::pair<double, double> best_key{kInf, kInf};
    for (size_t k = 0; k < all.size(); ++k) {
      double c = all[k].cost[i], t = all[k].time[i];
      std::pair<double, double> key = {c, t};
      if (req.objective == Objective::time) key = {t, c};
      if (req.objective == Objective::cost_under_deadline) key = {t <= *req.deadline_s ? c : kInf, t};
      if (req.objective == Objective::budget) key = {c <= *req.budget ? t : kInf, c};
      bool wins_draw = best < 0 || key.first < best_key.first - 1e-9 * std::fabs(best_key.first) ||
                       (near(key.first, best_key.first) && key.second < best_key.second);
      if (wins_draw && key.first < kInf) best = static_cast<int>(k), best_key = key;
    }
    if (best >= 0) ++wins[best];
  }
  for (size_t k = 0; k < all.size(); ++k) all[k].entry.p_best = static_cast<double>(wins[k]) / static_cast<double>(draws);
}

Status check_request(const PlanRequest& req, std::span<const PlanCandidate> candidates) {
  if (candidates.empty()) return make_error(Code::invalid_argument, "plan: no candidate configs");
  if (req.repetitions < 1) return make_error(Code::invalid_argument, "plan: repetitions must be >= 1");
  if (req.objective == Objective::cost_under_deadline && !(req.deadline_s && *req.deadline_s > 0))
    return make_error(Code::invalid_argument, "plan: objective cost_under_deadline needs a deadline > 0 seconds");
  if (req.objective == Objective::budget && !(req.budget && *req.budget >= 0))
    return make_error(Code::invalid_argument, "plan: objective budget needs a budget >= 0");
  if (!(req.deadline_confidence > 0 && req.deadline_confidence <= 1))
    return make_error(Code::invalid_argument, "plan: deadline confidence must be in (0, 1]");
  for (const auto& c : candidates) {
    if (!(c.hourly_price >= 0) || !std::isfinite(c.hourly_price))
      return make_error(Code::invalid_argument, "plan: " + c.cfg.config + " has no valid hourly price");
    if (c.spot && !(c.spot->rate_per_hour >= 0 && std::isfinite(c.spot->rate_per_hour) &&
                    c.spot->checkpoint_every_s > 0 && std::isfinite(c.spot->checkpoint_every_s) &&
                    c.spot->max_interruptions >= 0 && c.spot->max_interruptions <= 1000 &&
                    c.spot->on_demand_price >= 0 && (!c.spot->restart_s || *c.spot->restart_s >= 0) &&
                    std::isfinite(c.spot->recovery_price) && c.spot->recovery_price >= 0 &&
                    std::isfinite(c.spot->recovery_rate)))
      return make_error(Code::invalid_argument, "plan: " + c.cfg.config + "'s interruption model is invalid "
                                                "(rate >= 0, checkpoint interval > 0, 0..1000 interruptions)");
    if (c.currency != candidates.front().currency)
      return make_error(Code::invalid_argument, "plan: candidates are priced in " + candidates.front().currency +
                                                    " and " + c.currency + "; convert them to one currency first");
  }
  return {};
}

}  // namespace

bool paid_once_when_packed(int phase) {
  return phase == kStartup || phase == kInstall || phase == kLoadData || phase == kPoweroff;
}

std::string_view objective_name(Objective o) {
  switch (o) {
    case Objective::cost: return "cost";
    case Objective::time: return "time";
    case Objective::cost_under_deadline: return "cost_under_deadline";
    case Objective::budget: return "budget";
  }
  return "cost";
}

Result<Objective> parse_objective(std::string_view name) {
  for (auto o : {Objective::cost, Objective::time, Objective::cost_under_deadline, Objective::budget})
    if (objective_name(o) == name) return o;
  return make_error(Code::invalid_argument,
                    "unknown objective '" + std::string(name) + "': use cost, time, cost_under_deadline or budget");
}

std::string_view packing_name(Packing p) { return p == Packing::fresh ? "fresh" : "packed"; }

Result<PackingChoice> parse_packing(std::string_view name) {
  if (name == "fresh") return PackingChoice::fresh;
  if (name == "packed") return PackingChoice::packed;
  if (name == "best") return PackingChoice::best;
  return make_error(Code::invalid_argument, "unknown packing '" + std::string(name) + "': use fresh, packed or best");
}

SpotRate estimate_spot_rate(int interruptions, double machine_hours, double prior_rate, double prior_hours) {
  char buf[200];
  const double rate = (prior_rate * prior_hours + interruptions) / (prior_hours + machine_hours);
  if (machine_hours <= 0 && interruptions == 0) {
    std::snprintf(buf, sizeof buf, "prior: %.3g/h (no spot machine of this type measured yet)", prior_rate);
  } else {
    std::snprintf(buf, sizeof buf,
                  "measured: %d interruption%s in %.3g spot machine-hours, with the prior %.3g/h counted as %.3g "
                  "machine-hour%s",
                  interruptions, interruptions == 1 ? "" : "s", machine_hours, prior_rate, prior_hours,
                  prior_hours == 1 ? "" : "s");
  }
  return {rate, buf};
}

Result<PlanCandidate> candidate_from_offer(const Catalog& catalog, const CatalogOffer& offer,
                                           std::span<const BillingRule> user_rules, bool spot, SpotModel spot_model) {
  PlanCandidate c;
  c.cfg.config = catalog.provider + "/" + offer.instance_type + (spot ? "/spot" : "");
  if (spot) {
    c.predict_as = catalog.provider + "/" + offer.instance_type;
    spot_model.on_demand_price = offer.hourly;
    spot_model.free_first_hour = spot_model.free_first_hour || catalog.provider == "aws";
    if (spot_model.rate_basis.empty()) spot_model.rate_basis = estimate_spot_rate(0, 0, spot_model.rate_per_hour).basis;
    c.spot = spot_model;
  }
  c.cfg.provider = catalog.provider;
  c.cfg.instance_type = offer.instance_type;
  c.cfg.cores = offer.vcpus;
  c.cfg.gpus = offer.gpus;
  c.cfg.gpu_type = offer.gpu_type;
  c.cfg.cpu_family = !offer.cpu_family.empty() ? offer.cpu_family : instance_family(offer.instance_type);
  c.cfg.memory_gib = offer.memory_gib;
  c.currency = catalog.currency;
  if (spot && !offer.spot_hourly)
    return make_error(Code::invalid_argument, catalog.provider + " " + offer.instance_type + " has no spot price");
  c.hourly_price = spot ? *offer.spot_hourly : offer.hourly;
  const std::string& name = !offer.billing.empty() ? offer.billing : catalog.billing;
  if (!name.empty()) {
    auto rule = parse_rule(name, user_rules);
    if (!rule) return rule.error();
    c.rule = *rule;
  } else if (auto rule = rule_for_provider(catalog.provider, user_rules)) {
    c.rule = *rule;
  } else {
    c.rule = *parse_rule("per_second_60s_min");
  }
  if (offer.monthly) c.rule = with_monthly_cap(c.rule, c.hourly_price, *offer.monthly);
  return c;
}

RunDraw draw_run(const PlanCandidate& c, const Prediction& p, size_t i, std::mt19937_64& rng) {
  if (!c.spot) return {expected_cost(c.rule, c.hourly_price, p.t_sum[i]), p.t_sum[i], false};
  const double pre = p.phases[kStartup][i] + p.phases[kInstall][i] + p.phases[kLoadData][i] + p.phases[kStart][i];
  auto d = simulate_spot(*c.spot, c, pre, p.phases[kLearn][i], p.t_sum[i] - pre - p.phases[kLearn][i], rng);
  return {d.cost, d.wall, d.failed};
}

std::string PlanEntry::label() const {
  if (repetitions <= 1) return candidate.cfg.config;
  return candidate.cfg.config + " (" + std::string(packing_name(packing)) + ")";
}

Result<Plan> make_plan(const Predictor& predictor, std::span<const PlanCandidate> candidates, const PlanRequest& req) {
  if (auto s = check_request(req, candidates); !s) return s.error();
  Plan plan;
  plan.request = req;
  plan.spread = predictor.spread_source();
  std::vector<Evaluated> all;
  for (const auto& c : candidates) {
    ConfigSpec as = c.cfg;
    if (!c.predict_as.empty()) as.config = c.predict_as;
    auto p = predictor.predict(as);
    if (!p) {
      plan.unpredictable.emplace_back(c.cfg.config, p.error().detail);
      continue;
    }
    std::vector<Packing> modes{Packing::fresh};
    if (req.repetitions > 1 && req.packing == PackingChoice::packed) modes = {Packing::packed};
    if (req.repetitions > 1 && req.packing == PackingChoice::best) modes = {Packing::fresh, Packing::packed};
    for (auto mode : modes) {
      all.push_back(evaluate(*p, c, mode, req));
      judge(all.back(), req);
    }
  }
  if (all.empty())
    return make_error(Code::not_found, "plan: no candidate can be predicted: " + plan.unpredictable.front().second);
  share_of_best(all, req);
  for (auto& ev : all) plan.ranked.push_back(std::move(ev.entry));
  std::stable_sort(plan.ranked.begin(), plan.ranked.end(),
                   [&](const PlanEntry& a, const PlanEntry& b) { return better(a, b, req.objective); });
  explain_plan(plan);
  return plan;
}

json plan_to_json(const Plan& plan) {
  const auto& req = plan.request;
  json ranked = json::array();
  for (const auto& e : plan.ranked) {
    json phases = json::object();
    for (int ph = 0; ph < 8; ++ph) phases[std::string(kPhaseNames[ph])] = e.phases[ph];
    json j = {{"config", e.candidate.cfg.config},
              {"provider", e.candidate.cfg.provider},
              {"instance_type", e.candidate.cfg.instance_type},
              {"nodes", e.candidate.cfg.nodes},
              {"repetitions", e.repetitions},
              {"packing", packing_name(e.packing)},
              {"instances", e.packing == Packing::fresh ? e.repetitions : 1},
              {"billing", e.candidate.rule.name},
              {"hourly_price", e.candidate.hourly_price},
              {"currency", e.candidate.currency},
              {"phases", phases},
              {"t_sum", e.t_mean},
              {"t_sum_p10", e.t_p10},
              {"t_sum_p90", e.t_p90},
              {"billed_s", e.billed_s},
              {"cost", e.cost},
              {"feasible", e.feasible},
              {"confidence",
               {{"basis", e.basis}, {"overhead_basis", e.overhead_basis}, {"runs", e.runs}, {"p_best", e.p_best}}},
              {"free", {{"repetitions", e.free_repetitions}, {"epochs", e.free_epochs}}},
              {"reason", e.reason}};
    if (req.deadline_s) j["p_deadline"] = e.p_deadline;
    j["market"] = e.candidate.spot ? "spot" : "on-demand";
    if (const auto& m = e.candidate.spot) {
      j["interruptions"] = {{"rate_per_hour", m->rate_per_hour},
                            {"rate_basis", m->rate_basis},
                            {"checkpoint_every_s", m->checkpoint_every_s},
                            {"restart_s", m->restart_s ? json(*m->restart_s) : json(nullptr)},
                            {"restart_basis", m->restart_basis},
                            {"on_demand_after", m->on_demand_after},
                            {"max_interruptions", m->max_interruptions},
                            {"free_first_hour", m->free_first_hour},
                            {"policy", m->policy},
                            {"recovery", m->recovery_offer.empty()
                                             ? json(nullptr)
                                             : json{{"offer", m->recovery_offer},
                                                    {"hourly_price", m->recovery_price},
                                                    {"rate_per_hour", m->recovery_rate}}},
                            {"expected", e.interruptions},
                            {"lost_s", e.lost_s},
                            {"restarts_s", e.restart_s},
                            {"p_fail", e.p_fail}};
    }
    ranked.push_back(std::move(j));
  }
  json unpredictable = json::array();
  for (const auto& [config, why] : plan.unpredictable) unpredictable.push_back({{"config", config}, {"why", why}});
  json once = json::array();
  for (int ph = 0; ph < 8; ++ph)
    if (paid_once_when_packed(ph)) once.push_back(kPhaseNames[ph]);
  json out = {{"objective", objective_name(req.objective)},
              {"repetitions", req.repetitions},
              {"packed_pays_once", once},
              {"ranked", ranked},
              {"unpredictable", unpredictable},
              {"spread", plan.spread}};
  if (req.deadline_s) out["deadline_s"] = *req.deadline_s, out["deadline_confidence"] = req.deadline_confidence;
  if (req.budget) out["budget"] = *req.budget;
  return out;
}

}  // namespace tsum::billing
