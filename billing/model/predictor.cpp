#include "billing/model/predictor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <numeric>
#include <set>

#include "billing/model/nnls.h"
#include "billing/model/phase_priors.h"

namespace tsum::billing {

namespace {

constexpr double kPartialCv = 0.05;    // extra spread of a learn time scaled up from probes only
constexpr double kOverheadFloorCv = 0.05;
constexpr double kSingleRunCv = 0.10;

double mean_of(const std::vector<double>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double sd_of(const std::vector<double>& v) {
  if (v.size() < 2) return 0.0;
  double m = mean_of(v), s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string cached_tag(bool cached) { return cached ? "|cached" : "|cold"; }

// Overheads are keyed without the image flag, except install, which is what the flag is about.
std::string type_key(const ConfigSpec& c, int phase) {
  return c.provider + "|" + c.instance_type + (phase == kInstall ? cached_tag(c.image_cached) : "");
}
std::string provider_key(const ConfigSpec& c, int phase) {
  return c.provider + (phase == kInstall ? cached_tag(c.image_cached) : "");
}

double prior_of(const PhasePrior& p, int phase, bool cached) {
  switch (phase) {
    case kStartup: return p.startup;
    case kInstall: return cached ? p.install_cached : p.install_cold;
    case kLoadData: return p.load_data;
    case kStart: return p.start;
    case kSave: return p.save;
    case kPoweroff: return p.poweroff;
    default: return 0;
  }
}

std::vector<double> normal_samples(double mean, double sd, int count, std::mt19937_64& rng) {
  std::normal_distribution<double> z(0.0, 1.0);
  std::vector<double> out(count);
  for (auto& x : out) x = std::max(0.0, mean + sd * z(rng));
  return out;
}

std::vector<double> from_values(const std::vector<double>& v, int count, std::mt19937_64& rng) {
  double m = mean_of(v);
  double sd = v.size() >= 2 ? std::max(sd_of(v), kOverheadFloorCv * m) : kSingleRunCv * m;
  return normal_samples(m, sd, count, rng);
}

Result<double> fraction_of(const MeasuredRun& r, const Workload& w) {
  if (r.images_done) {
    if (!(w.images_per_epoch > 0) || !(w.epochs > 0))
      return make_error(Code::invalid_argument, "run of " + r.cfg.config +
                                                    " reports images_done, but the workload's images_per_epoch is unknown");
    if (!(*r.images_done > 0))
      return make_error(Code::invalid_argument, "run of " + r.cfg.config + ": images_done must be > 0");
    return *r.images_done / (w.epochs * w.images_per_epoch);
  }
  if (r.epochs_done) {
    if (!(*r.epochs_done > 0) || !(w.epochs > 0))
      return make_error(Code::invalid_argument, "run of " + r.cfg.config + ": epochs_done and epochs must be > 0");
    return *r.epochs_done / w.epochs;
  }
  return 1.0;
}

}  // namespace

double Prediction::mean(int phase) const { return mean_of(phases[phase]); }
double Prediction::t_mean() const { return mean_of(t_sum); }

std::string Predictor::group_of(const ConfigSpec& c) { return ResourceModel::family_of(c); }

double Predictor::count_of(const ConfigSpec& c) { return ResourceModel::count_of(c); }

std::string Predictor::spread_source() const {
  char buf[160];
  if (repeated_configs_ > 0)
    std::snprintf(buf, sizeof buf, "run-to-run cv %.1f%%, learned from %d config%s run more than once", 100 * noise_cv_,
                  repeated_configs_, repeated_configs_ == 1 ? "" : "s");
  else
    std::snprintf(buf, sizeof buf, "a prior run-to-run cv of %.1f%%: no config has two full runs yet", 100 * noise_cv_);
  return buf;
}

const ScalingModel* Predictor::curve(const std::string& group) const {
  auto it = groups_.find(group);
  return it == groups_.end() ? nullptr : &it->second;
}

Result<Predictor> Predictor::learn(std::span<const MeasuredRun> history, const Workload& workload,
                                   const PredictorOptions& opt) {
  if (opt.samples < 1 || opt.bootstrap < 1)
    return make_error(Code::invalid_argument, "predictor: samples and bootstrap must be >= 1");
  Predictor p;
  p.workload_ = workload;
  p.opt_ = opt;
  for (const auto& r : history)
    for (int i = 0; i < 8; ++i)
      if (!std::isfinite(r.phases[i]) || r.phases[i] < 0)
        return make_error(Code::invalid_argument, "run of " + r.cfg.config + ": phase " +
                                                      std::string(kPhaseNames[i]) + " must be a finite number >= 0");
  if (auto s = p.add_learn(history); !s) return s.error();
  p.add_overheads(history);
  if (auto s = p.fit_groups(history); !s) return s.error();
  return p;
}

// The full-workload learn time of one run at its steady throughput, when it reported one.
std::optional<double> Predictor::learn_at_rate(const MeasuredRun& r, double fraction) const {
  if (!r.steady_images_per_s || !(*r.steady_images_per_s > 0) || fraction >= 1) return std::nullopt;
  const double total = workload_.epochs * workload_.images_per_epoch;
  if (!(total > 0)) return std::nullopt;
  const double done = r.images_done ? *r.images_done : fraction * total;
  return r.phases[kLearn] + std::max(0.0, total - done) / *r.steady_images_per_s;
}

Status Predictor::add_learn(std::span<const MeasuredRun> history) {
  struct Point {
    double f, learn;
  };
  std::map<std::string, std::vector<Point>> scaled;  // partial runs without a rate, and full runs
  std::map<std::string, std::vector<double>> at_rate;
  std::map<std::string, std::vector<PhaseSeconds>> full;
  std::map<std::string, double> memory_used;  // the largest a run of the config used
  for (const auto& r : history) {
    if (r.failed) continue;  // a lower bound only (fit_groups)
    auto f = fraction_of(r, workload_);
    if (!f) return f.error();
    config_group_[r.cfg.config] = {count_of(r.cfg), group_of(r.cfg)};
    config_spec_[r.cfg.config] = r.cfg;
    describes_memory_ = describes_memory_ || r.cfg.memory_gib > 0;
    if (*f == 1.0) full[r.cfg.config].push_back(r.phases);
    if (r.memory_used) memory_used[r.cfg.config] = std::max(memory_used[r.cfg.config], *r.memory_used);
    if (auto learn = learn_at_rate(r, *f)) at_rate[r.cfg.config].push_back(*learn);
    else scaled[r.cfg.config].push_back({*f, r.phases[kLearn]});
  }
  std::vector<double> rel_sds;
  for (const auto& [config, _] : config_group_) {
    ConfigRuns runs;
    const auto& pts = scaled[config];
    std::set<double> fs;
    for (const auto& p : pts) fs.insert(p.f);
    double slope = 0;
    if (fs.size() >= 2) {
      // Runs at two or more fractions: learn = a + b·f separates a fixed warm-up a from the per-share time b.
      Matrix A(static_cast<int>(pts.size()), 2);
      std::vector<double> b;
      for (size_t i = 0; i < pts.size(); ++i) {
        A(static_cast<int>(i), 0) = 1;
        A(static_cast<int>(i), 1) = pts[i].f;
        b.push_back(pts[i].learn);
      }
      auto ab = nnls(A, b);
      if (!ab) return ab.error();
      slope = (*ab)[1];
    }
    for (const auto& p : pts) runs.learn_full.push_back(fs.size() >= 2 ? p.learn + slope * (1 - p.f) : p.learn / p.f);
    for (double l : at_rate[config]) runs.learn_full.push_back(l);
    runs.full_runs = full[config];
    runs.any_full = !runs.full_runs.empty();
    if (auto it = memory_used.find(config); it != memory_used.end()) runs.memory_used = it->second;
    if (runs.full_runs.size() >= 2) {
      std::vector<double> learns;
      for (const auto& ph : runs.full_runs) learns.push_back(ph[kLearn]);
      if (mean_of(learns) > 0) rel_sds.push_back(sd_of(learns) / mean_of(learns));
    }
    configs_[config] = std::move(runs);
  }
  repeated_configs_ = static_cast<int>(rel_sds.size());
  double pooled = 0;
  for (double r : rel_sds) pooled += r * r;
  noise_cv_ = std::max(opt_.min_noise_cv, rel_sds.empty() ? 0.0 : std::sqrt(pooled / rel_sds.size()));
  std::vector<double> verify_ratios;
  for (const auto& [config, runs] : full)
    for (const auto& ph : runs)
      if (ph[kLearn] > 0) verify_ratios.push_back(ph[kVerify] / ph[kLearn]);
  if (!verify_ratios.empty()) verify_ratio_ = median_of(verify_ratios);
  return {};
}

void Predictor::add_overheads(std::span<const MeasuredRun> history) {
  for (const auto& r : history) {
    if (r.failed) continue;
    const bool partial = r.images_done || r.epochs_done;
    for (int ph = 0; ph < 8; ++ph) {
      if (ph == kLearn || (partial && (ph == kVerify || ph == kSave))) continue;
      by_type_[type_key(r.cfg, ph)].v[ph].push_back(r.phases[ph]);
      by_provider_[provider_key(r.cfg, ph)].v[ph].push_back(r.phases[ph]);
    }
  }
}

Status Predictor::fit_groups(std::span<const MeasuredRun> history) {
  std::map<std::string, std::vector<ScalingPoint>> points;
  std::vector<ResourcePoint> resource_points;
  for (const auto& [config, runs] : configs_) {
    const auto& [count, group] = config_group_[config];
    points[group].push_back({count, mean_of(runs.learn_full)});
    if (mean_of(runs.learn_full) > 0)
      resource_points.push_back({config_spec_[config], mean_of(runs.learn_full), runs.memory_used});
  }
  const bool resources = opt_.model == LearnModel::resources || (opt_.model == LearnModel::automatic && describes_memory_);
  if (resources && !resource_points.empty()) {
    // A failed run measures nothing but a lower bound on its config's learn time (the seconds it learned), which
    // only the resource model takes (ResourcePoint::unfinished), where no finished run measured the config.
    for (const auto& r : history)
      if (r.failed && r.phases[kLearn] > 0 && !configs_.contains(r.cfg.config))
        resource_points.push_back({r.cfg, r.phases[kLearn], r.memory_used, true});
    ResourceOptions ro{opt_.particles, opt_.memory_lo_gib, opt_.memory_hi_gib, seed_mix(opt_.seed, "resources")};
    auto model = ResourceModel::fit(resource_points, ro);
    if (!model) return model.error();
    resources_ = std::move(*model);
  }
  for (const auto& [group, pts] : points) {
    ScalingOptions so{opt_.bootstrap, noise_cv_, seed_mix(opt_.seed, group)};
    auto model = ScalingModel::fit(pts, so);
    if (!model) return make_error(model.error().code, "learn curve of " + group + ": " + model.error().detail);
    groups_.emplace(group, std::move(*model));
  }
  return {};
}

std::vector<double> Predictor::learn_samples(const ConfigSpec& cfg, Prediction& p, std::mt19937_64& rng) const {
  if (auto it = configs_.find(cfg.config); it != configs_.end()) {
    const auto& runs = it->second;
    double m = mean_of(runs.learn_full);
    double cv = std::max(noise_cv_, runs.learn_full.size() >= 2 && m > 0 ? sd_of(runs.learn_full) / m : 0.0);
    if (!runs.any_full) cv = std::sqrt(cv * cv + kPartialCv * kPartialCv);
    p.basis = "measured";
    p.runs = static_cast<int>(runs.learn_full.size());
    return normal_samples(m, cv * m, opt_.samples, rng);
  }
  if (resources_) {
    p.basis = resources_->family_measured(cfg) ? "family" : "cross-family";
    p.log_sd = resources_->log_sd(cfg);
    return resources_->sample(cfg, opt_.samples, rng);
  }
  const ScalingModel* model = curve(group_of(cfg));
  if (!model) return {};
  p.basis = model->basis(count_of(cfg));
  return model->sample(count_of(cfg), opt_.samples, rng);
}

std::vector<double> Predictor::phase_samples(const ConfigSpec& cfg, int ph, const std::vector<double>& learn,
                                             Prediction& p, std::mt19937_64& rng) const {
  auto lookup = [&](const std::map<std::string, PhaseValues>& m, const std::string& key) -> const std::vector<double>* {
    auto it = m.find(key);
    return it == m.end() || it->second.v[ph].empty() ? nullptr : &it->second.v[ph];
  };
  const std::vector<double>* values = lookup(by_type_, type_key(cfg, ph));
  std::string basis = "measured";
  if (!values && ph != kVerify) {
    values = lookup(by_provider_, provider_key(cfg, ph));
    basis = "provider";
  }
  if (ph == kStartup) p.overhead_basis = values ? basis : "prior";
  if (values) return from_values(*values, opt_.samples, rng);
  if (ph == kVerify) {
    std::vector<double> out(learn.size());
    for (size_t i = 0; i < learn.size(); ++i)
      out[i] = verify_ratio_ >= 0 ? verify_ratio_ * learn[i] : kVerifyPerEpoch * learn[i] / std::max(1.0, workload_.epochs);
    return out;
  }
  const auto& prior = phase_prior(cfg.provider);
  double m = prior_of(prior, ph, cfg.image_cached);
  return normal_samples(m, prior.cv * m, opt_.samples, rng);
}

Result<Prediction> Predictor::predict(const ConfigSpec& cfg) const {
  std::mt19937_64 rng(seed_mix(opt_.seed, cfg.config));
  Prediction p;
  if (auto it = configs_.find(cfg.config); it != configs_.end() && it->second.full_runs.size() >= kEmpiricalRuns)
    return empirical(it->second.full_runs);
  auto learn = learn_samples(cfg, p, rng);
  if (learn.empty())
    return make_error(Code::not_found, "no measured run predicts the learn phase of " + cfg.config + " (group " +
                                           group_of(cfg) + ")");
  p.epoch_s = mean_of(learn) / std::max(1e-9, workload_.epochs);
  for (int ph = 0; ph < 8; ++ph) p.phases[ph] = ph == kLearn ? learn : phase_samples(cfg, ph, learn, p, rng);
  p.t_sum.assign(opt_.samples, 0.0);
  for (int ph = 0; ph < 8; ++ph)
    for (int i = 0; i < opt_.samples; ++i) p.t_sum[i] += p.phases[ph][i];
  return p;
}

Prediction Predictor::empirical(const std::vector<PhaseSeconds>& runs) const {
  Prediction p;
  p.basis = "measured";
  p.overhead_basis = "measured";
  p.runs = static_cast<int>(runs.size());
  for (int ph = 0; ph < 8; ++ph) p.phases[ph].resize(opt_.samples);
  p.t_sum.resize(opt_.samples);
  for (int i = 0; i < opt_.samples; ++i) {
    const auto& run = runs[static_cast<size_t>(i) % runs.size()];
    for (int ph = 0; ph < 8; ++ph) p.phases[ph][i] = run[ph];
    p.t_sum[i] = t_sum_of(run);
  }
  p.epoch_s = p.mean(kLearn) / std::max(1e-9, workload_.epochs);
  return p;
}

}  // namespace tsum::billing
