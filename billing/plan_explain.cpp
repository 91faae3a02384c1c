#include "billing/plan_explain.h"

#include <cmath>
#include <cstdio>

namespace tsum::billing {

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

bool same(double a, double b, double rel) { return std::fabs(a - b) <= rel * std::max(std::fabs(a), std::fabs(b)) + 1e-12; }

// "half the price", "a third of the price", "0.62x the price".
std::string price_ratio(double ratio) {
  if (same(ratio, 0.5, 0.01)) return "half the price";
  if (same(ratio, 1.0 / 3.0, 0.01)) return "a third of the price";
  if (same(ratio, 0.25, 0.01)) return "a quarter of the price";
  return fmt("%.2gx the price", ratio);
}

std::string seconds(double s) { return fmt("%.0f s", s); }

std::string billed_at(const PlanEntry& e) {
  return format_duration(e.billed_s) + " at " + format_money(e.candidate.hourly_price, e.candidate.currency) + "/h";
}

std::string winner_on_cost(const PlanEntry& w, const PlanEntry& r) {
  const std::string prefix = w.candidate.rule.name + ": ";
  const bool same_bill = same(w.billed_s, r.billed_s, 1e-6);
  const bool same_price = same(w.candidate.hourly_price, r.candidate.hourly_price, 1e-9);
  if (same(w.cost, r.cost, 1e-9))
    return prefix + "ties " + r.label() + " on cost (" + format_money(w.cost, w.candidate.currency) +
           ") and finishes sooner (" + seconds(w.t_mean) + " vs " + seconds(r.t_mean) + ")";
  if (same_bill && w.candidate.rule.name == r.candidate.rule.name && r.candidate.hourly_price > 0)
    return prefix + "both bill " + format_duration(w.billed_s) + "; " + w.label() + " is " +
           price_ratio(w.candidate.hourly_price / r.candidate.hourly_price);
  if (same_price)
    return prefix + "bills " + format_duration(w.billed_s) + " vs " + format_duration(r.billed_s) + " for " + r.label() +
           " at the same price";
  return prefix + billed_at(w) + " = " + format_money(w.cost, w.candidate.currency) + " vs " + r.label() + ": " +
         billed_at(r) + " = " + format_money(r.cost, r.candidate.currency);
}

std::string winner_reason(const Plan& plan) {
  const auto& req = plan.request;
  const PlanEntry& w = plan.ranked[0];
  const PlanEntry* r = plan.ranked.size() > 1 ? &plan.ranked[1] : nullptr;
  if (!w.feasible) {
    if (req.objective == Objective::budget)
      return "nothing fits the budget of " + format_money(*req.budget, w.candidate.currency) + "; this is the cheapest (" +
             format_money(w.cost, w.candidate.currency) + ")";
    return "nothing meets the deadline with " + fmt("%.0f%%", 100 * req.deadline_confidence) +
           " confidence; this is the likeliest (" + fmt("%.2f", w.p_deadline) + ")";
  }
  switch (req.objective) {
    case Objective::cost:
      return r ? winner_on_cost(w, *r) : "the only candidate: " + billed_at(w);
    case Objective::cost_under_deadline:
      return (r && r->feasible ? winner_on_cost(w, *r) : "the only one to meet the deadline: " + billed_at(w)) +
             "; P(t_sum <= " + seconds(*req.deadline_s) + ") = " + fmt("%.2f", w.p_deadline) +
             (plan.spread.empty() ? "" : " (spread: " + plan.spread + ")");
    case Objective::time:
      return r ? "fastest: " + seconds(w.t_mean) + " vs " + seconds(r->t_mean) + " for " + r->label()
               : "the only candidate: " + seconds(w.t_mean);
    case Objective::budget:
      return "fastest within " + format_money(*req.budget, w.candidate.currency) + ": " + seconds(w.t_mean) + " for " +
             format_money(w.cost, w.candidate.currency);
  }
  return "";
}

std::string loser_reason(const Plan& plan, const PlanEntry& e) {
  const auto& req = plan.request;
  const PlanEntry& w = plan.ranked[0];
  if (!e.feasible && req.objective == Objective::cost_under_deadline)
    return "misses the deadline: P(t_sum <= " + seconds(*req.deadline_s) + ") = " + fmt("%.2f", e.p_deadline) + " < " +
           fmt("%.2f", req.deadline_confidence);
  if (!e.feasible && req.objective == Objective::budget)
    return "over budget: " + format_money(e.cost, e.candidate.currency) + " > " +
           format_money(*req.budget, e.candidate.currency);
  if (req.objective == Objective::time || req.objective == Objective::budget)
    return seconds(e.t_mean - w.t_mean) + " slower than " + w.label() + " (" + seconds(e.t_mean) + ")";
  if (same(e.cost, w.cost, 1e-9))
    return "same cost as " + w.label() + " but slower (" + seconds(e.t_mean) + " vs " + seconds(w.t_mean) + ")";
  std::string ratio = w.cost > 0 ? fmt("%.2fx", e.cost / w.cost) : "more than";
  return e.candidate.rule.name + ": " + ratio + " the cost of " + w.label() + ": " + billed_at(e) + " vs " + billed_at(w);
}

}  // namespace

std::string format_money(double amount, const std::string& currency) {
  const double a = std::fabs(amount);
  const char* f = a >= 100 ? "%.2f" : a >= 1 ? "%.3f" : a >= 0.01 ? "%.4f" : "%.6f";
  return fmt(f, amount) + " " + currency;
}

// What a spot entry's numbers already hold: "spot: 0.12 interruptions expected (0.05/h, prior: ...), redoing
// 4 s of learning and 11 s of restarts on average".
std::string spot_note(const PlanEntry& e) {
  const auto& m = *e.candidate.spot;
  std::string out = "spot at " + format_money(e.candidate.hourly_price, e.candidate.currency) + "/h: " +
                    fmt("%.2g", e.interruptions) + " interruptions expected (" + m.rate_basis + "), redoing " +
                    fmt("%.1f s", e.lost_s) + " of learning and " + fmt("%.1f s", e.restart_s) + " of restarts on average";
  if (m.free_first_hour) out += "; a machine the cloud takes back within its first hour is free";
  if (e.p_fail > 0) out += "; fails in " + fmt("%.2g%%", 100 * e.p_fail) + " of draws (more than " +
                           std::to_string(m.max_interruptions) + " interruptions)";
  return out;
}

void explain_plan(Plan& plan) {
  if (plan.ranked.empty()) return;
  plan.ranked[0].reason = winner_reason(plan);
  for (size_t i = 1; i < plan.ranked.size(); ++i) plan.ranked[i].reason = loser_reason(plan, plan.ranked[i]);
  for (auto& e : plan.ranked)
    if (e.candidate.spot) e.reason += "; " + spot_note(e);
}

}  // namespace tsum::billing
