#include "trace_replay.h"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <regex>
#include <set>
#include <sstream>

using namespace tsum::billing;

namespace tsum::bench {

namespace {

constexpr double kInf = INFINITY;

// Comma-separated fields; a field in double quotes may hold commas (IBM's error messages do).
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (ch == '"') {
      if (quoted && i + 1 < line.size() && line[i + 1] == '"') out.back() += '"', ++i;
      else quoted = !quoted;
    } else if (ch == ',' && !quoted) {
      out.emplace_back();
    } else if (ch != '\r') {
      out.back() += ch;
    }
  }
  return out;
}

// The header's column indexes by name.
std::map<std::string, size_t> columns(const std::string& header) {
  std::map<std::string, size_t> at;
  auto names = split_csv(header);
  for (size_t i = 0; i < names.size(); ++i) at[names[i]] = i;
  return at;
}

double number(const std::vector<std::string>& f, size_t i) {
  if (i >= f.size() || f[i].empty()) return 0;
  try {
    return std::stod(f[i]);
  } catch (...) {
    return 0;
  }
}

}  // namespace

// Scout (../shared/testdata/scout/runs.csv): workload, instance_type, nodes, vcpus_per_node, memory_gib_per_node,
// price_per_hour_per_node, runtime_s, completed. 165 s of overheads around each run, as bench_planner's replay.
std::vector<TraceCase> load_scout(const std::string& path) {
  std::ifstream in(path);
  std::vector<TraceCase> cases;
  std::string line;
  if (!in || !std::getline(in, line)) return cases;
  std::map<std::string, size_t> index;
  while (std::getline(in, line)) {
    auto f = split_csv(line);
    if (f.size() < 8) continue;
    TraceRow r;
    auto& c = r.cand.cfg;
    c.nodes = static_cast<int>(number(f, 2));
    c.config = f[2] + "x" + f[1];
    c.provider = "aws";
    c.instance_type = f[1];
    c.cpu_family = instance_family(f[1]);
    c.cores = static_cast<int>(number(f, 3));
    c.memory_gib = number(f, 4);
    r.cand.hourly_price = number(f, 5) * c.nodes;
    r.runtime = number(f, 6);
    r.completed = f[7] == "1";
    if (!index.contains(f[0])) index[f[0]] = cases.size(), cases.push_back({"scout " + f[0], {}, kScoutOverheads});
    cases[index[f[0]]].rows.push_back(std::move(r));
  }
  return cases;
}

// IBM multi-cloud (multi-cloud-configuration.csv): provider A/B/C with label-encoded family, type and vCPU columns,
// nodes, workload, target_cost (USD), target_runtime (s), status. The hourly price per node is target_cost over
// the runtime's hours over the nodes (constant per type); vCPU code k is taken as 2^(k+1) cores (the price doubles
// with it); memory is not given. The cost is the runtime's, so no overheads are added. A configuration measured
// more than once keeps its first completed row.
std::vector<TraceCase> load_ibm(const std::string& path) {
  std::ifstream in(path);
  std::vector<TraceCase> cases;
  std::string line;
  if (!in || !std::getline(in, line)) return cases;
  auto at = columns(line);
  for (const char* need : {"provider", "nodes", "workload", "target_cost", "target_runtime", "status"})
    if (!at.contains(need)) return cases;
  std::map<std::string, std::map<std::string, TraceRow>> by_workload;
  std::map<std::string, double> node_price;  // per type, from any row with a runtime
  std::vector<std::pair<std::string, TraceRow>> rows;
  while (std::getline(in, line)) {
    auto f = split_csv(line);
    if (f.size() < at.size()) continue;
    const std::string provider = f[at["provider"]];
    std::string family = provider, vcpu;
    for (const char* col : {"A_family", "B_family", "C_family", "C_type"})
      if (at.contains(col) && !f[at[col]].empty()) family += std::string("-") + f[at[col]];
    for (const char* col : {"A_vcpu", "B_vcpu", "C_vcpu"})
      if (at.contains(col) && !f[at[col]].empty()) vcpu = f[at[col]];
    TraceRow r;
    auto& c = r.cand.cfg;
    c.nodes = static_cast<int>(number(f, at["nodes"]));
    c.provider = "cloud" + provider;
    c.cpu_family = family;
    c.cores = 2 << (vcpu == "1" ? 1 : 0);
    c.instance_type = family + "-" + std::to_string(c.cores) + "c";
    c.config = std::to_string(c.nodes) + "x" + c.instance_type;
    r.runtime = number(f, at["target_runtime"]);
    r.completed = f[at["status"]] == "ok";
    const double cost = number(f, at["target_cost"]);
    if (r.runtime > 0 && cost > 0 && c.nodes > 0) node_price[c.instance_type] = cost / (r.runtime / 3600) / c.nodes;
    rows.emplace_back(f[at["workload"]], std::move(r));
  }
  std::vector<std::string> order;
  for (auto& [workload, r] : rows) {
    if (!node_price.contains(r.cand.cfg.instance_type)) continue;
    r.cand.hourly_price = node_price[r.cand.cfg.instance_type] * r.cand.cfg.nodes;
    auto& configs = by_workload[workload];
    if (configs.empty()) order.push_back(workload);
    auto it = configs.find(r.cand.cfg.config);
    if (it == configs.end() || (!it->second.completed && r.completed)) configs[r.cand.cfg.config] = r;
  }
  for (const auto& w : order) {
    TraceCase c{"ibm " + w, {}, {}};
    for (auto& [config, r] : by_workload[w]) c.rows.push_back(r);
    if (std::any_of(c.rows.begin(), c.rows.end(), [](const TraceRow& r) { return r.completed; })) cases.push_back(std::move(c));
  }
  return cases;
}

// TrimTuner (cnn.csv, rnn.csv): n_workers, vm_flavor, learning_rate, batch_size, synchronism, training_set_size,
// training_time. A run's machines are its workers and one parameter server, at the authors' t2 prices; runs at
// or above 595 s hit the time cap. One case per setting at the full training set (60,000 images).
std::vector<TraceCase> load_trimtuner(const std::string& path, const std::string& model) {
  static const std::map<std::string, std::pair<double, std::pair<int, double>>> t2 = {
      {"t2.small", {0.023, {1, 2}}}, {"t2.medium", {0.0464, {2, 4}}}, {"t2.xlarge", {0.1856, {4, 16}}},
      {"t2.2xlarge", {0.3712, {8, 32}}}};
  std::ifstream in(path);
  std::vector<TraceCase> cases;
  std::string line;
  if (!in || !std::getline(in, line)) return cases;
  auto at = columns(line);
  for (const char* need : {"n_workers", "vm_flavor", "learning_rate", "batch_size", "synchronism", "training_set_size",
                           "training_time"})
    if (!at.contains(need)) return cases;
  std::map<std::string, size_t> index;
  while (std::getline(in, line)) {
    auto f = split_csv(line);
    if (f.size() < at.size() || f[at["training_set_size"]] != "60000") continue;
    auto type = t2.find(f[at["vm_flavor"]]);
    if (type == t2.end()) continue;
    TraceRow r;
    auto& c = r.cand.cfg;
    c.nodes = static_cast<int>(number(f, at["n_workers"])) + 1;
    c.provider = "aws";
    c.instance_type = type->first;
    c.cpu_family = "t2";
    c.cores = type->second.second.first;
    c.memory_gib = type->second.second.second;
    c.config = std::to_string(c.nodes) + "x" + c.instance_type;
    r.cand.hourly_price = type->second.first * c.nodes;
    r.runtime = number(f, at["training_time"]);
    r.completed = r.runtime > 0 && r.runtime < 595;
    const std::string setting = "trimtuner " + model + " lr " + f[at["learning_rate"]] + " batch " +
                                f[at["batch_size"]] + " " + f[at["synchronism"]];
    if (!index.contains(setting)) index[setting] = cases.size(), cases.push_back({setting, {}, {}});
    cases[index[setting]].rows.push_back(std::move(r));
  }
  std::erase_if(cases, [](const TraceCase& c) {
    return std::none_of(c.rows.begin(), c.rows.end(), [](const TraceRow& r) { return r.completed; });
  });
  return cases;
}

namespace {

TraceCase make_case(uint64_t seed, bool high_cliff) {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 12345);
  auto uniform = [&](double a, double b) { return std::uniform_real_distribution<double>(a, b)(rng); };
  auto chance = [&](double p) { return uniform(0, 1) < p; };
  TraceCase c;
  c.name = "generated " + std::to_string(seed);
  const double overhead = uniform(30, 300);
  c.overheads = {overhead * 0.4, overhead * 0.3, overhead * 0.15, overhead * 0.05, 0, 0, 0, overhead * 0.1};
  // The machines: 3-8 families, each with its memory per core, speed and price per core-hour; 2-4 sizes each,
  // clusters of 1-5 nodes; 50-70 configs drawn from them.
  const int families = std::uniform_int_distribution<int>(3, 8)(rng);
  const size_t target = std::uniform_int_distribution<size_t>(50, 70)(rng);
  struct Family {
    double mem_per_core, speed, price_core;
    int first, sizes;
  };
  std::vector<Family> fam;
  for (int f = 0; f < families; ++f) {
    Family x;
    x.mem_per_core = std::pow(2.0, std::uniform_int_distribution<int>(0, 3)(rng));
    x.speed = std::exp(uniform(-0.3, 0.3));
    x.price_core = 0.03 * std::exp(uniform(-0.3, 0.3)) * (1 + 0.15 * std::log2(x.mem_per_core)) * std::sqrt(x.speed);
    x.first = std::uniform_int_distribution<int>(0, 2)(rng);
    x.sizes = std::uniform_int_distribution<int>(2, 4)(rng);
    fam.push_back(x);
  }
  // Few families: each gets more sizes, until there are enough configs to draw from.
  for (size_t f = 0, combos = 0;; f = (f + 1) % fam.size()) {
    combos = 0;
    for (const auto& x : fam) combos += 5 * static_cast<size_t>(x.sizes);
    if (combos >= target) break;
    fam[f].sizes = std::min(6, fam[f].sizes + 1);
  }
  std::vector<TraceRow> all;
  for (int f = 0; f < families; ++f) {
    const Family& x = fam[f];
    for (int s = x.first; s < x.first + x.sizes; ++s)
      for (int nodes = 1; nodes <= 5; ++nodes) {
        TraceRow r;
        auto& cfg = r.cand.cfg;
        cfg.cores = 2 << s;
        cfg.nodes = nodes;
        cfg.provider = "gen";
        cfg.cpu_family = "f" + std::to_string(f);
        cfg.instance_type = cfg.cpu_family + "." + std::to_string(cfg.cores) + "c";
        cfg.memory_gib = x.mem_per_core * cfg.cores;
        cfg.config = std::to_string(nodes) + "x" + cfg.instance_type;
        r.cand.hourly_price = x.price_core * cfg.cores * nodes;
        r.runtime = x.speed;  // the family's speed until the job is known
        all.push_back(std::move(r));
      }
  }
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(std::min(all.size(), target));
  // The job: W core-seconds with a serial share, a cost per extra node, and (in most tables) a working set
  // somewhere inside the configs' range of memory: below it a run is 2-8x slower.
  const double work = std::pow(10.0, uniform(4, 6));
  const double serial = uniform(0, 0.15);
  const double per_node = uniform(0, 0.02) * work / 64;
  double mem_lo = kInf, mem_hi = 0;
  for (const auto& r : all) {
    mem_lo = std::min(mem_lo, r.cand.cfg.memory_gib * r.cand.cfg.nodes);
    mem_hi = std::max(mem_hi, r.cand.cfg.memory_gib * r.cand.cfg.nodes);
  }
  double working_set = chance(0.7) ? std::exp(uniform(std::log(mem_lo), std::log(mem_hi))) : 0;
  double cliff = uniform(2, 8);
  if (high_cliff) {  // just above the 85th percentile of the configs' memory
    std::vector<double> memory;
    for (const auto& r : all) memory.push_back(r.cand.cfg.memory_gib * r.cand.cfg.nodes);
    std::sort(memory.begin(), memory.end());
    working_set = memory[static_cast<size_t>(0.85 * static_cast<double>(memory.size() - 1))] * 1.001;
    cliff = uniform(6, 9);
    c.name = "cliff " + std::to_string(seed);
  }
  c.working_set_gib = working_set;
  std::vector<double> times;
  for (auto& r : all) {
    const auto& cfg = r.cand.cfg;
    const double n = static_cast<double>(cfg.cores * cfg.nodes);
    double t = work / r.runtime * (serial + (1 - serial) / n) + per_node * (cfg.nodes - 1);
    if (cfg.memory_gib * cfg.nodes < working_set) t *= cliff;
    t *= std::exp(std::normal_distribution<double>(0, 0.05)(rng));  // one noisy run
    if (chance(0.05)) t *= uniform(1.3, 2.0);                       // the odd straggler
    r.runtime = t;
    times.push_back(t);
  }
  // Half the tables have a time cap that some runs hit: they time out, and their runtime is the cap.
  if (chance(0.5)) {
    std::sort(times.begin(), times.end());
    const double cap = times[static_cast<size_t>(uniform(0.6, 0.95) * static_cast<double>(times.size() - 1))];
    for (auto& r : all)
      if (r.runtime > cap) r.runtime = cap, r.completed = false;
  }
  c.rows = std::move(all);
  return c;
}

}  // namespace

TraceCase generated_case(uint64_t seed) { return make_case(seed, false); }
TraceCase cliff_case(uint64_t seed) { return make_case(seed, true); }

MeasuredRun run_of(const TraceCase& c, const TraceRow& r) {
  MeasuredRun m;
  m.cfg = r.cand.cfg;
  m.phases = c.overheads;
  m.phases[kLearn] = r.runtime;
  return m;
}

double row_t_sum(const TraceCase& c, const TraceRow& r) { return billing::t_sum_of(c.overheads) + r.runtime; }

double true_cost(const TraceCase& c, const TraceRow& r) {
  return r.completed ? expected_cost(r.cand.rule, r.cand.hourly_price, row_t_sum(c, r)) : kInf;
}

ProbeFn prober(const TraceCase& c) {
  return [&c](const PlanCandidate& cand, const ProbeSpec& spec) -> Result<MeasuredRun> {
    for (const auto& r : c.rows) {
      if (r.cand.cfg.config != cand.cfg.config) continue;
      MeasuredRun m = run_of(c, r);
      const double memory = r.cand.cfg.memory_gib * std::max(1, r.cand.cfg.nodes);
      if (c.sampled && memory > 0) {
        // Past its memory a job fills it; below, it holds its working set (at least its runtime's tenth of a
        // machine).
        const double held = std::max(c.working_set_gib, 0.1 * r.cand.cfg.memory_gib);
        m.memory_used = c.working_set_gib > memory ? 0.98 : held / memory;
      }
      if (spec.max_s > 0 && row_t_sum(c, r) > spec.max_s) {
        // Stopped once it has run max_s: the phases up to then, in order.
        double left = spec.max_s;
        for (double& phase : m.phases) phase = std::min(phase, left), left -= phase;
        m.failed = true, m.failure = "stopped at the probe's limit";
      } else if (!r.completed) {
        m.failed = true, m.failure = "the run did not complete";
      }
      return m;
    }
    return make_error(Code::not_found, "no row for " + cand.cfg.config);
  };
}

Total replay_total(TraceCase c, const BillingRule& rule, double future_runs, int max_probes,
                   const PredictorOptions& predictor, double probe_budget, Calibration* calibration) {
  Total out;
  std::vector<PlanCandidate> cands;
  std::map<std::string, const TraceRow*> row_of;
  for (auto& r : c.rows) r.cand.rule = rule;
  for (const auto& r : c.rows) cands.push_back(r.cand), row_of[r.cand.cfg.config] = &r;
  out.optimum = kInf;
  for (const auto& r : c.rows) out.optimum = std::min(out.optimum, true_cost(c, r));
  SearchRequest req;
  req.workload = Workload{1, 0};
  req.predictor = predictor;
  req.max_probes = max_probes;
  req.future_runs = future_runs;
  if (probe_budget >= 0) req.probe_budget = probe_budget;
  out.first_budget = kInf;
  std::vector<double> budget_at;  // the budget of the round that started each probe
  req.on_probe = [&](const SearchResult& so_far, const ProbeStep& next) {
    if (!std::isfinite(out.first_budget) && std::isfinite(so_far.budget)) out.first_budget = so_far.budget;
    if (std::isfinite(out.first_budget) && so_far.budget != out.first_budget) out.budget_fixed = false;
    if (so_far.budget < so_far.spent) out.budget_fixed = false;
    budget_at.push_back(so_far.budget);
    // Started only when its p90 fits.
    if (so_far.budget < kInf && so_far.spent + next.expected_probe_cost_p90 > so_far.budget * (1 + 1e-9))
      out.budget_kept = false;
  };
  auto s = adaptive_search(cands, {}, prober(c), req);
  if (!s) {
    out.error = s.error().detail;
    return out;
  }
  out.ok = true;
  if (s->budget < s->spent || (std::isfinite(out.first_budget) && s->budget != out.first_budget))
    out.budget_fixed = false;
  out.probes = static_cast<int>(s->trace.size());
  out.doubted = !s->doubt.empty();
  for (const auto& step : s->trace) {
    out.free_probes += step.why.find("the config least like any probed") != std::string::npos;
    const double memory = row_of.at(step.config)->cand.cfg.cluster_memory_gib();
    out.probed_above_working_set |= c.working_set_gib > 0 && memory >= c.working_set_gib;
  }
  out.spent = s->spent;
  out.budget = s->budget;
  out.stop_reason = s->stop_reason;
  // The search stops on its budget only where no probe that fits it is worth its cost (issue 64): its stop reason
  // names the affordable probe worth most with its saving and cost (4 significant digits), or says none fits.
  if (out.stop_reason.starts_with("the exploration budget is spent")) {
    static const std::regex affordable(
        "; the affordable probe worth most, .+?, is expected to save (\\S+) for a probe of (\\S+): not worth it");
    std::smatch m;
    out.budget_stop_kept = std::regex_search(out.stop_reason, m, affordable)
                               ? std::stod(m[1].str()) <= std::stod(m[2].str()) * (1 + 1e-3)
                               : out.stop_reason.find("; no other probe's p90 cost fits the ") != std::string::npos;
  }
  if (out.first_budget == kInf) out.first_budget = s->budget;
  // Nor did a probe, however long it ran, take the spend past the budget of the round that started it.
  double spent = 0;
  for (size_t k = 0; k < s->trace.size() && k < budget_at.size(); ++k) {
    spent += s->trace[k].probe_cost;
    if (spent > budget_at[k] * (1 + 1e-9)) out.budget_kept = false;
  }
  // A probe stopped where it could no longer beat the best config measured before it cost at most that config's
  // run, and its own config was indeed no cheaper (the replay's runs cost what its rows say).
  double best_before = kInf;
  for (const auto& step : s->trace) {
    const double truth = true_cost(c, *row_of.at(step.config));
    if (!step.error.empty() && step.limit == kLimitPastBest) {
      ++out.stopped_early;
      if (step.probe_cost > best_before * (1 + 1e-9) || truth < best_before * (1 - 1e-9)) out.stops_kept = false;
    }
    if (step.error.empty()) best_before = std::min(best_before, truth);
  }
  const std::string pick = s->recommendation().candidate.cfg.config;
  out.pick_cost = true_cost(c, *row_of.at(pick));
  out.regret = out.pick_cost / out.optimum - 1;
  out.ratio = (out.spent + future_runs * out.pick_cost) / (future_runs * out.optimum);
  double measured_best = kInf;
  for (const auto& step : s->trace)
    if (step.error.empty()) measured_best = std::min(measured_best, true_cost(c, *row_of.at(step.config)));
  out.blind = out.pick_cost > measured_best * 1.05 + 1e-12;
  if (calibration) {
    // Round k is what the search believed after k probes: the families and the best true value measured by then.
    std::string optimum;
    for (const auto& r : c.rows)
      if (true_cost(c, r) == out.optimum) optimum = r.cand.cfg.config;
    auto truth = [&](const std::string& config) { return true_cost(c, *row_of.at(config)); };
    for (size_t k = 0; k < s->rounds.size(); ++k) {
      std::set<std::string> families;
      double best = kInf;
      for (size_t j = 0; j < k && j < s->trace.size(); ++j)
        if (s->trace[j].error.empty()) {
          families.insert(row_of.at(s->trace[j].config)->cand.cfg.cpu_family);
          best = std::min(best, truth(s->trace[j].config));
        }
      calibration->add_round(s->rounds[k], truth, optimum, out.optimum, best, s->tolerance,
                             [&](const std::string& config) {
                               return families.contains(row_of.at(config)->cand.cfg.cpu_family);
                             });
    }
  }
  for (const auto& step : s->trace) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "\n      %-14s run %6.3f probe %6.3f  ", step.config.c_str(),
                  true_cost(c, *row_of.at(step.config)) / out.optimum, step.probe_cost / out.optimum);
    out.probes_text += buf + step.why + (step.error.empty() ? "" : " [" + step.error + "]");
  }
  if (!s->trace.empty()) {
    const auto& first = s->trace.front();
    out.first_probe_cost = first.probe_cost;
    out.first_cost = first.error.empty() ? true_cost(c, *row_of.at(first.config)) : kInf;
    out.first_ratio = (out.first_probe_cost + future_runs * out.first_cost) / (future_runs * out.optimum);
    const double budget = std::isfinite(out.first_budget) ? out.first_budget : 0;
    out.total_kept = out.spent + future_runs * out.pick_cost <=
                     (out.first_probe_cost + future_runs * out.first_cost + budget) * (1 + 1e-9);
  }
  return out;
}

double random_median_regret(TraceCase c, const BillingRule& rule, int k, int orders, uint64_t seed) {
  std::vector<double> cost;
  for (auto& r : c.rows) r.cand.rule = rule, cost.push_back(true_cost(c, r));
  const double optimum = *std::min_element(cost.begin(), cost.end());
  std::mt19937_64 rng(seed);
  std::vector<size_t> order(cost.size());
  std::vector<double> regrets;
  for (int n = 0; n < orders; ++n) {
    std::iota(order.begin(), order.end(), size_t{0});
    double best = kInf;
    for (int j = 0; j < k && j < static_cast<int>(order.size()); ++j) {
      std::swap(order[j], order[j + std::uniform_int_distribution<size_t>(0, order.size() - 1 - j)(rng)]);
      best = std::min(best, cost[order[j]]);
    }
    regrets.push_back(best / optimum - 1);
  }
  return quantile(regrets, 0.5);
}

}  // namespace tsum::bench
