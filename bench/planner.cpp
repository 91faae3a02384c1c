// bench_planner: how well tsum's planner and probe search pick configs on synthetic trace tables whose true
// optimum is known (see planner_tables.h). Prints ratios; it is not a unit test. The totals also time the search's
// own compute per round.
//
//   bench_planner [--tables N] [--seed S] [--max-probes K] [--explain] [--scout CSV] [--ibm CSV] [--trimtuner DIR]
//                 [--generated N] [--totals]
//
// First what a search costs the user in all on the measured traces and generated tables (planner_totals.h;
// --totals: only that), then:
// Reports, over N seeded tables:
//  - how often billing-aware and linear pricing (price × E[t]) pick different configs, and linear's regret;
//  - whether the planner finds the exact billing-aware optimum of full tables (3 measured runs per config,
//    priced by brute force), and how often that is also the true optimum (3 noisy runs cannot always tell
//    configs within ~1% apart);
//  - median regret after k probes for tsum's adaptive search, random search and exhaustive probing;
//  - deadline violations of cost_under_deadline picks (the target is P(t_sum > D) < 10%).
// Regret = (true E[cost] of the pick - true optimum) / true optimum.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "billing/search/search.h"
#include "planner_calibration.h"
#include "planner_scout.h"
#include "planner_tables.h"
#include "planner_totals.h"
#include "trace_replay.h"

using namespace tsum::billing;
using tsum::bench::quantile;
using tsum::bench::Table;
using tsum::bench::Truth;

namespace {

constexpr double kProbeFraction = 0.03;  // ~300 steps of batch 64 out of 10 epochs of 60k images
constexpr int kTruthDraws = 2000;

struct Options {
  int tables = 200;
  uint64_t seed = 1;
  int max_probes = 6;
  bool explain = false;  // print each table where the search misses by more than 5% after 3 probes
  std::string scout;     // runs.csv of the Scout replay; "" = skip it
  std::string only;      // Scout workloads (with --totals, cases of any set) whose name contains this (--only)
  std::string sets;      // --totals: only the sets whose name starts with this (--sets)
  uint64_t predictor_seed = 1;  // --totals: the predictor's seed (--predictor-seed)
  int scout_seeds = 20;
  bool synthetic = true;
  LearnModel model = LearnModel::automatic;
  std::string ibm, trimtuner;  // the other measured traces (--ibm, --trimtuner)
  int generated = 100;         // generated tables of the traces' shape for the totals (--generated)
  bool totals_only = false;    // --totals: only what a search costs in all
};

size_t index_of(const Table& t, const std::string& config) {
  for (size_t k = 0; k < t.configs.size(); ++k)
    if (t.configs[k].candidate.cfg.config == config) return k;
  return 0;
}

std::vector<PlanCandidate> candidates(const Table& t) {
  std::vector<PlanCandidate> out;
  for (const auto& c : t.configs) out.push_back(c.candidate);
  return out;
}

size_t argmin(const std::vector<Truth>& tr, double Truth::*key) {
  size_t best = 0;
  for (size_t k = 1; k < tr.size(); ++k) {
    double a = tr[k].*key, b = tr[best].*key;
    if (a < b - 1e-12 * b || (std::fabs(a - b) <= 1e-12 * b && tr[k].t_mean < tr[best].t_mean)) best = k;
  }
  return best;
}

double regret(const std::vector<Truth>& tr, size_t pick, size_t opt) { return tr[pick].cost / tr[opt].cost - 1; }

double mean(const std::vector<double>& v) {
  return v.empty() ? NAN : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double share(const std::vector<double>& v, double at_most) {
  double n = 0;
  for (double x : v) n += x <= at_most + 1e-12;
  return v.empty() ? NAN : n / static_cast<double>(v.size());
}

LearnModel g_model = LearnModel::automatic;  // --model

PredictorOptions predictor_options() {
  PredictorOptions p;
  p.model = g_model;
  p.samples = 420;  // divisible by the 3 runs per config of the full tables
  p.bootstrap = 100;
  return p;
}

// The planner's pick among `cands` given `history`; SIZE_MAX when it cannot plan.
size_t plan_pick(const Table& t, const std::vector<MeasuredRun>& history, const std::vector<PlanCandidate>& cands,
                 const PlanRequest& req) {
  auto p = Predictor::learn(history, t.workload, predictor_options());
  if (!p) return SIZE_MAX;
  auto plan = make_plan(*p, cands, req);
  if (!plan) return SIZE_MAX;
  return index_of(t, plan->ranked[0].candidate.cfg.config);
}

ProbeFn prober(const Table& t) {
  return [&t](const PlanCandidate& c, const ProbeSpec&) -> tsum::Result<MeasuredRun> {
    return tsum::bench::simulate_run(t, index_of(t, c.cfg.config), kProbeFraction, 7);
  };
}

SearchRequest search_request(const Table& t, int max_probes, double future_runs) {
  SearchRequest req;
  req.workload = t.workload;
  req.predictor = predictor_options();
  req.probe.images = kProbeFraction * t.workload.epochs * t.workload.images_per_epoch;
  req.probe_budget = 1e9;
  req.max_probes = max_probes;
  req.future_runs = future_runs;
  return req;
}

struct Stats {
  int tables = 0, differs = 0, exact = 0, exact_table = 0, full_within_1pct = 0;
  std::vector<double> linear_regret, full_regret, exhaustive_regret, deadline_miss, search_deadline_miss;
  std::vector<std::vector<double>> tsum_regret, random_regret;  // [k-1][table]
  std::vector<double> natural_probes[2], natural_regret[2], natural_spend[2];  // 10 and 100 future runs
  tsum::bench::Calibration calibration;
  int deadline_tables_missing = 0, search_deadline_tables_missing = 0;
};

void full_table_metrics(const Table& t, const std::vector<Truth>& tr, size_t opt, Stats& st) {
  const auto cands = candidates(t);
  std::vector<MeasuredRun> full;
  for (size_t k = 0; k < t.configs.size(); ++k)
    for (uint64_t d = 0; d < 3; ++d) full.push_back(tsum::bench::simulate_run(t, k, 1.0, d));
  size_t pick = plan_pick(t, full, cands, {});
  if (pick == SIZE_MAX) return;
  // The table's own billing-aware optimum: brute force over the runs it holds.
  std::vector<Truth> table_truth(t.configs.size());
  for (const auto& r : full) {
    size_t k = index_of(t, r.cfg.config);
    const auto& c = t.configs[k].candidate;
    table_truth[k].cost += expected_cost(c.rule, c.hourly_price, t_sum_of(r.phases)) / 3;
    table_truth[k].t_mean += t_sum_of(r.phases) / 3;
  }
  const size_t table_opt = argmin(table_truth, &Truth::cost);
  st.exact_table += pick == table_opt;
  st.exact += pick == opt;
  st.full_regret.push_back(regret(tr, pick, opt));
  st.full_within_1pct += regret(tr, pick, opt) <= 0.01;

  // A deadline between the fastest config and the median one, so cheap slow configs miss it.
  std::vector<double> means;
  for (const auto& x : tr) means.push_back(x.t_mean);
  std::sort(means.begin(), means.end());
  PlanRequest dl;
  dl.objective = Objective::cost_under_deadline;
  dl.deadline_s = 0.5 * (means.front() + means[means.size() / 2]);
  size_t dpick = plan_pick(t, full, cands, dl);
  if (dpick == SIZE_MAX) return;
  double miss = 1 - tr[dpick].p_within(*dl.deadline_s);
  st.deadline_miss.push_back(miss);
  st.deadline_tables_missing += miss > 0.1;

  auto sreq = search_request(t, 3, 1000);
  sreq.plan = dl;
  auto s = adaptive_search(cands, {}, prober(t), sreq);
  if (!s) return;
  double smiss = 1 - tr[index_of(t, s->recommendation().candidate.cfg.config)].p_within(*dl.deadline_s);
  st.search_deadline_miss.push_back(smiss);
  st.search_deadline_tables_missing += smiss > 0.1;
}

void explain_miss(const Table& t, const std::vector<Truth>& tr, size_t opt, const SearchResult& s) {
  const auto& rec = s.recommendation();
  std::printf("table %llu: optimum %s (%.4f, %s), recommended %s (true %.4f, predicted %.4f)\n",
              static_cast<unsigned long long>(t.seed), t.configs[opt].candidate.cfg.config.c_str(), tr[opt].cost,
              t.configs[opt].candidate.rule.name.c_str(), rec.candidate.cfg.config.c_str(),
              tr[index_of(t, rec.candidate.cfg.config)].cost, rec.cost);
  for (const auto& step : s.trace) std::printf("  probe %s: %s\n", step.config.c_str(), step.why.c_str());
  for (const auto& e : s.plan.ranked)
    std::printf("  %-10s true %.4f predicted %.4f (%s)\n", e.candidate.cfg.config.c_str(),
                tr[index_of(t, e.candidate.cfg.config)].cost, e.cost, e.basis.c_str());
}

void search_metrics(const Table& t, const std::vector<Truth>& tr, size_t opt, const Options& o, Stats& st) {
  const auto cands = candidates(t);
  for (int k = 1; k <= o.max_probes; ++k) {
    auto s = adaptive_search(cands, {}, prober(t), search_request(t, k, 1000));
    st.tsum_regret[k - 1].push_back(s ? regret(tr, index_of(t, s->recommendation().candidate.cfg.config), opt) : NAN);
    if (o.explain && k == 3 && s && st.tsum_regret[k - 1].back() > 0.05) explain_miss(t, tr, opt, *s);
    if (s && k == o.max_probes) {
      double measured_best = INFINITY;
      for (size_t r = 0; r < s->rounds.size(); ++r) {
        if (r > 0 && s->trace[r - 1].error.empty())
          measured_best = std::min(measured_best, tr[index_of(t, s->trace[r - 1].config)].cost);
        st.calibration.add_round(s->rounds[r], [&](const std::string& c) { return tr[index_of(t, c)].cost; },
                                 t.configs[opt].candidate.cfg.config, tr[opt].cost, measured_best, s->tolerance);
      }
    }
  }
  // Natural stopping: the plan will run 10 or 100 times; stop when a probe no longer pays for itself.
  for (int i = 0; i < 2; ++i) {
    const double runs = i ? 100 : 10;
    auto req = search_request(t, 0, runs);
    req.probe_budget.reset();  // the default budget, as a user gets it
    auto nat = adaptive_search(cands, {}, prober(t), req);
    if (!nat) continue;
    st.natural_probes[i].push_back(static_cast<double>(nat->trace.size()));
    st.natural_regret[i].push_back(regret(tr, index_of(t, nat->recommendation().candidate.cfg.config), opt));
    st.natural_spend[i].push_back(nat->spent / (runs * tr[opt].cost));
  }
  // Random search: probe k random configs, pick the best of those by the planner.
  std::mt19937_64 rng(t.seed * 31 + 17);
  std::vector<size_t> order(t.configs.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<MeasuredRun> hist;
  std::vector<PlanCandidate> probed;
  for (int k = 1; k <= o.max_probes; ++k) {
    if (static_cast<size_t>(k) <= order.size()) {
      hist.push_back(tsum::bench::simulate_run(t, order[k - 1], kProbeFraction, 7));
      probed.push_back(t.configs[order[k - 1]].candidate);
    }
    size_t pick = plan_pick(t, hist, probed, {});
    st.random_regret[k - 1].push_back(pick == SIZE_MAX ? NAN : regret(tr, pick, opt));
  }
  // Exhaustive: probe every config, then plan.
  std::vector<MeasuredRun> all;
  for (size_t k = 0; k < t.configs.size(); ++k) all.push_back(tsum::bench::simulate_run(t, k, kProbeFraction, 7));
  size_t pick = plan_pick(t, all, cands, {});
  if (pick != SIZE_MAX) st.exhaustive_regret.push_back(regret(tr, pick, opt));
}

void report(const Stats& st, const Options& o) {
  std::printf("bench_planner: %d tables (seed %llu), probes learn %.0f%% of the workload\n\n", st.tables,
              static_cast<unsigned long long>(o.seed), 100 * kProbeFraction);
  std::printf("billing-aware vs linear pricing pick different configs: %.1f%% of tables\n", 100.0 * st.differs / st.tables);
  std::printf("  regret of the linear pick under true billing: median %.1f%%, p90 %.1f%%\n",
              100 * quantile(st.linear_regret, 0.5), 100 * quantile(st.linear_regret, 0.9));
  std::printf("\nfull tables (3 measured runs per config), objective cost:\n");
  std::printf("  picks the table's billing-aware optimum (brute force over its runs): %.1f%% of tables\n",
              100.0 * st.exact_table / st.tables);
  std::printf("  picks the true optimum (of the run distribution the table was drawn from): %.1f%% of tables; within 1%% regret: %.1f%%; median regret %.2f%%\n",
              100.0 * st.exact / st.tables, 100.0 * st.full_within_1pct / st.tables, 100 * quantile(st.full_regret, 0.5));
  std::printf("\nregret after k probes (median / p90 / share of tables within 5%%):\n");
  std::printf("   k   tsum search               random search\n");
  for (int k = 1; k <= o.max_probes; ++k) {
    const auto& a = st.tsum_regret[k - 1];
    const auto& b = st.random_regret[k - 1];
    std::printf("  %2d   %5.1f%% / %5.1f%% / %5.1f%%   %5.1f%% / %5.1f%% / %5.1f%%\n", k, 100 * quantile(a, 0.5),
                100 * quantile(a, 0.9), 100 * share(a, 0.05), 100 * quantile(b, 0.5), 100 * quantile(b, 0.9),
                100 * share(b, 0.05));
  }
  std::printf("  exhaustive (every config probed): %5.1f%% / %5.1f%% / %5.1f%%\n", 100 * quantile(st.exhaustive_regret, 0.5),
              100 * quantile(st.exhaustive_regret, 0.9), 100 * share(st.exhaustive_regret, 0.05));
  for (int i = 0; i < 2; ++i)
    std::printf("  stopping by itself (plan to be run %dx): median %.0f probes, spend / the planned runs' cost at the "
                "optimum median %.4f max %.4f, median regret %.1f%%, within 5%%: %.1f%%\n",
                i ? 100 : 10, quantile(st.natural_probes[i], 0.5), quantile(st.natural_spend[i], 0.5),
                quantile(st.natural_spend[i], 1.0), 100 * quantile(st.natural_regret[i], 0.5),
                100 * share(st.natural_regret[i], 0.05));
  st.calibration.print("synthetic tables, every round of the searches of --max-probes probes");
  std::printf("\ncost_under_deadline (P(t_sum <= D) >= 0.9 required):\n");
  std::printf("  full tables: mean P(t_sum > D) of the pick %.1f%%, tables where it exceeds 10%%: %.1f%%\n",
              100 * mean(st.deadline_miss),
              100.0 * st.deadline_tables_missing / std::max<size_t>(1, st.deadline_miss.size()));
  std::printf("  search, 3 probes: mean P(t_sum > D) of the pick %.1f%%, tables where it exceeds 10%%: %.1f%%\n",
              100 * mean(st.search_deadline_miss),
              100.0 * st.search_deadline_tables_missing / std::max<size_t>(1, st.search_deadline_miss.size()));

  const double exact = 1.0 * st.exact_table / st.tables;
  const double within3 = share(st.tsum_regret[std::min(2, o.max_probes - 1)], 0.05);
  const double violations = mean(st.deadline_miss);
  std::printf("\ntargets:\n");
  std::printf("  exact billing-aware optimum of full tables: %.1f%% of tables  [%s]\n", 100 * exact,
              exact >= 0.999 ? "met" : "NOT met");
  std::printf("  <= 5%% regret within 3 probes on >= 90%% of tables: %.1f%%  [%s]\n", 100 * within3,
              within3 >= 0.9 ? "met" : "NOT met");
  std::printf("  deadline violations < 10%%: %.1f%%  [%s]\n", 100 * violations, violations < 0.1 ? "met" : "NOT met");
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--explain")) {
      o.explain = true;
      continue;
    }
    if (!std::strcmp(argv[i], "--totals")) {
      o.totals_only = true;
      continue;
    }
    if (!std::strcmp(argv[i], "--no-synthetic")) {
      o.synthetic = false;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "bench_planner: %s needs a value\n", argv[i]);
      break;
    }
    if (!std::strcmp(argv[i], "--tables")) o.tables = std::max(1, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--seed")) o.seed = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--predictor-seed")) o.predictor_seed = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--max-probes")) o.max_probes = std::max(3, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--scout")) o.scout = argv[i + 1];
    else if (!std::strcmp(argv[i], "--scout-seeds")) o.scout_seeds = std::max(1, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--only")) o.only = argv[i + 1];
    else if (!std::strcmp(argv[i], "--sets")) o.sets = argv[i + 1];
    else if (!std::strcmp(argv[i], "--ibm")) o.ibm = argv[i + 1];
    else if (!std::strcmp(argv[i], "--trimtuner")) o.trimtuner = argv[i + 1];
    else if (!std::strcmp(argv[i], "--generated")) o.generated = std::max(0, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--model"))
      o.model = !std::strcmp(argv[i + 1], "resources") ? LearnModel::resources
                : !std::strcmp(argv[i + 1], "family")  ? LearnModel::family
                                                       : LearnModel::automatic;
    else std::fprintf(stderr, "bench_planner: ignoring unknown argument %s\n", argv[i]);
    ++i;
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  g_model = o.model;
  if (int rc = tsum::bench::run_totals({o.scout, o.ibm, o.trimtuner, o.generated, o.seed, o.explain, o.model, true, o.sets, o.only, o.predictor_seed}); rc != 0)
    return rc;
  if (o.totals_only) return 0;
  if (!o.synthetic) return o.scout.empty() ? 0 : tsum::bench::run_scout({o.scout, o.scout_seeds, std::max(8, o.max_probes), o.explain, o.only, o.model});
  Stats st;
  st.tsum_regret.resize(o.max_probes);
  st.random_regret.resize(o.max_probes);
  for (int i = 0; i < o.tables; ++i) {
    const Table t = tsum::bench::make_table(o.seed * 100000 + i);
    const auto tr = tsum::bench::truths(t, kTruthDraws);
    const size_t opt = argmin(tr, &Truth::cost);
    const size_t lin = argmin(tr, &Truth::linear);
    ++st.tables;
    st.differs += lin != opt;
    st.linear_regret.push_back(regret(tr, lin, opt));
    full_table_metrics(t, tr, opt, st);
    search_metrics(t, tr, opt, o, st);
  }
  report(st, o);
  if (!o.scout.empty()) return tsum::bench::run_scout({o.scout, o.scout_seeds, std::max(8, o.max_probes), o.explain, o.only, o.model});
  return 0;
}
