// Whether the search still trusts its model (billing/search/search_parts.h): its probes against their bands and
// their promised improvements, and, when it does not, probes spread without it.
#include "billing/search/search_parts.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <set>

namespace tsum::billing::search_detail {

// The mean and sd of the logs of positive draws.
std::pair<double, double> log_moments(const std::vector<double>& draws) {
  double n = 0, sum = 0, sq = 0;
  for (double x : draws)
    if (x > 0) n += 1, sum += std::log(x), sq += std::log(x) * std::log(x);
  if (n < 2) return {n ? sum : 0, 0};
  const double mean = sum / n;
  return {mean, std::sqrt(std::max(0.0, sq / n - mean * mean))};
}

std::optional<Expectation> expectation_of(const Scored& s, std::span<const PlanCandidate> candidates,
                                          const std::vector<Scored>& scored, double future_runs) {
  if (!s.pred || s.probed) return std::nullopt;
  Expectation e;
  e.config = candidates[s.index].cfg.config;
  if (!s.prior) {
    e.band = CandidateBand{e.config, quantile_of(s, 0.1), s.mean_value, quantile_of(s, 0.9), false, s.pred->basis};
    std::tie(e.log_learn_mean, e.log_learn_sd) = log_moments(s.pred->phases[kLearn]);
  }
  e.incumbent = incumbent_of(scored);
  double below = 0;
  for (size_t i = 0; i < s.value.size(); ++i) below += s.valid[i] && s.value[i] < e.incumbent;
  e.p_improve = below / static_cast<double>(std::max<size_t>(1, s.value.size()));
  e.promised = future_runs * expected_improvement(s, e.incumbent);
  return e;
}

// The last probe against what was expected of it: in its band or not, improving on the incumbent or not, and by
// how much against what it promised.
void judge_last_probe(const Expectation& e, const std::vector<Scored>& scored, std::span<const PlanCandidate> candidates,
                      const SearchRequest& req, SearchResult& out) {
  const Scored* s = scored_of(scored, candidates, e.config);
  if (!s || !s->pred || s->prior) return;
  if (e.band) {
    out.model_check.probes += 1;
    out.model_check.outside += s->mean_value < e.band->p10 || s->mean_value > e.band->p90;
    const double measured = s->pred->mean(kLearn);
    if (e.log_learn_sd > 0 && measured > 0) {
      const double z = (std::log(measured) - e.log_learn_mean) / e.log_learn_sd;
      if (std::isfinite(z)) out.model_check.z_squared.push_back(z * z);
    }
  }
  out.improvement_check.predicted.push_back(e.p_improve);
  out.improvement_check.improved += s->mean_value < e.incumbent;
  out.improvement_check.promised += e.promised;
  out.improvement_check.delivered += req.future_runs * std::max(0.0, e.incumbent - s->mean_value);
}

// Why the search no longer trusts its model, if it does not: its probes missed their bands, or improved far less
// often than predicted. From then on it explores without the model (explore_freely) instead of stopping: doubt
// that stopped the search locked in a bad incumbent exactly when the model was wrong (issue 50).
std::optional<std::string> doubt(SearchResult& out) {
  const auto& mc = out.model_check;
  const auto& ic = out.improvement_check;
  if (ModelCheck::fails(mc.probes, mc.outside)) {
    out.model_check.explains = false;
    return "the model does not explain the measurements: " + std::to_string(mc.outside) + " of " +
           std::to_string(mc.probes) + " probes fell outside the p10-p90 band predicted for them";
  }
  if (ImprovementCheck::fails(ic.predicted, ic.improved)) {
    out.improvement_check.explains = false;
    return "the model is too hopeful: " + std::to_string(ic.improved) + " of " + std::to_string(ic.predicted.size()) +
           " probes improved on the best measured config, where " + money(ic.expected_improved()) + " were expected";
  }
  return std::nullopt;
}


std::vector<Place> places_of(std::span<const PlanCandidate> candidates) {
  std::vector<Place> out;
  std::array<double, 3> lo, hi;
  lo.fill(kInfinity), hi.fill(-kInfinity);
  for (const auto& c : candidates) {
    const auto& cfg = c.cfg;
    Place p{Predictor::group_of(cfg),
            {std::log2(std::max(1, cfg.gpus > 0 ? cfg.gpus : cfg.cores)), std::log2(std::max(1, cfg.nodes)),
             cfg.memory_gib > 0 ? std::log2(cfg.cluster_memory_gib()) : 0.0}};
    for (int d = 0; d < 3; ++d) lo[d] = std::min(lo[d], p.x[d]), hi[d] = std::max(hi[d], p.x[d]);
    out.push_back(std::move(p));
  }
  for (auto& p : out)
    for (int d = 0; d < 3; ++d) p.x[d] = hi[d] > lo[d] ? (p.x[d] - lo[d]) / (hi[d] - lo[d]) : 0.0;
  return out;
}

// Squared distance: another family counts as a whole range apart.
double distance2(const Place& a, const Place& b) {
  double d = a.family == b.family ? 0.0 : 1.0;
  for (int i = 0; i < 3; ++i) d += (a.x[i] - b.x[i]) * (a.x[i] - b.x[i]);
  return d;
}

// E[max(0, incumbent - V)] for V log-normal with log mean mu and log sd sigma.
double lognormal_improvement(double incumbent, double mu, double sigma) {
  if (!(incumbent > 0)) return 0;
  const auto phi = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); };
  const double d = (std::log(incumbent) - mu) / sigma;
  return incumbent * phi(d) - std::exp(mu + 0.5 * sigma * sigma) * phi(d - sigma);
}

// A probe chosen without the model: among the configs whose p90 probe cost fits the budget, the one farthest from
// every config tried (maximin over family, cores, nodes and memory), each distance weighed against how much dearer
// its probe is than the cheapest one's. What it may save is also judged without the model: the measured configs'
// values, log-normal (their log mean and spread, at least a factor of 2), say what a config like them is worth
// against the incumbent.
std::optional<Choice> explore_freely(const std::vector<Scored>& scored, std::span<const PlanCandidate> candidates,
                                     const std::vector<Place>& places, const std::set<std::string>& probed,
                                     const std::set<std::string>& excluded, const SearchRequest& req,
                                     double budget_left, double& saving) {
  std::vector<double> logs;
  for (const auto& s : scored)
    if (s.probed && s.pred && s.mean_value > 0) logs.push_back(std::log(s.mean_value));
  const double n = static_cast<double>(logs.size());
  double mu = 0, var = 0;
  for (double x : logs) mu += x / std::max(1.0, n);
  for (double x : logs) var += (x - mu) * (x - mu) / std::max(1.0, n - 1);
  saving = req.future_runs *
           lognormal_improvement(incumbent_of(scored), mu, std::max(std::sqrt(var), std::log(2.0)));
  std::vector<const Scored*> open;  // affordable and never tried
  std::vector<size_t> tried;        // probed, or whose probe failed
  double cheapest = kInfinity;
  for (const auto& s : scored) {
    const auto& cfg = candidates[s.index].cfg;
    if (probed.contains(cfg.config) || excluded.contains(cfg.config)) tried.push_back(s.index);
    else if (s.probe_cost_p90 <= budget_left) open.push_back(&s), cheapest = std::min(cheapest, s.probe_cost);
  }
  std::optional<Choice> best;
  double best_score = -1;
  for (const Scored* open_one : open) {
    const Scored& s = *open_one;
    double nearest = kInfinity;
    for (size_t t : tried) nearest = std::min(nearest, distance2(places[s.index], places[t]));
    const double score = std::sqrt(nearest) * std::sqrt(cheapest / std::max(s.probe_cost, 1e-12));
    if (score > best_score)
      best_score = score,
      best = Choice{s.index,
                    "explore without the model: the config least like any probed (family, cores, nodes, memory) for "
                    "its probe cost; one like those measured is expected to save " + money(saving) + " over " +
                        money(req.future_runs) + " planned runs for a probe of " + money(s.probe_cost),
                    saving, s.probe_cost, true};
  }
  return best;
}

}  // namespace tsum::billing::search_detail

namespace tsum::billing {

using namespace search_detail;

double binomial_tail(int n, int k, double p) {
  double sum = 0;
  for (int x = std::max(0, k); x <= n; ++x) {
    double c = 1;
    for (int i = 0; i < x; ++i) c = c * (n - i) / (i + 1);
    sum += c * std::pow(p, x) * std::pow(1 - p, n - x);
  }
  return sum;
}

bool ModelCheck::fails(int probes, int outside) {
  return probes >= 3 && binomial_tail(probes, outside, 0.2) < 0.01;
}

double ModelCheck::widening() const {
  double sum = 0;
  for (double z2 : z_squared) sum += z2;
  const double n = static_cast<double>(z_squared.size());
  return std::clamp(std::sqrt((2 + sum) / (2 + n)), 1.0, kMaxWidening);
}

double poisson_binomial_cdf(std::span<const double> p, int k) {
  if (k < 0) return 0;
  std::vector<double> dist(p.size() + 1, 0.0);  // dist[x] = P(x successes so far)
  dist[0] = 1;
  for (size_t i = 0; i < p.size(); ++i) {
    for (size_t x = i + 1; x > 0; --x) dist[x] = dist[x] * (1 - p[i]) + dist[x - 1] * p[i];
    dist[0] *= 1 - p[i];
  }
  double sum = 0;
  for (int x = 0; x <= k && x < static_cast<int>(dist.size()); ++x) sum += dist[x];
  return std::min(1.0, sum);
}

double ImprovementCheck::discount() const {
  const double n = static_cast<double>(predicted.size());
  if (n == 0 || !(promised > 0)) return 1;
  return (n * delivered / promised + 1) / (n + 1);
}

double ImprovementCheck::expected_improved() const {
  double sum = 0;
  for (double p : predicted) sum += p;
  return sum;
}

bool ImprovementCheck::fails(std::span<const double> predicted, int improved) {
  return predicted.size() >= 3 && poisson_binomial_cdf(predicted, improved) < 0.01;
}

}  // namespace tsum::billing
