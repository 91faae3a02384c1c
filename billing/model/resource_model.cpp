#include "billing/model/resource_model.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numbers>
#include <numeric>

namespace tsum::billing {

namespace {

constexpr double kFamilySd = 0.2;   // log-sd of a family's speed relative to the others
constexpr double kNoCliff = 0.2;    // prior probability that memory does not matter at all
constexpr double kMaxCliff = 30;    // the slowest a job may run below its working set
constexpr double kCliffWidth = 0.05;  // of the logistic step, in log memory
constexpr double kFitSd = 0.15;     // log-sd of a measured config around the model (run noise and misfit)
constexpr double kDefaultMemLo = 1, kDefaultMemHi = 65536;
constexpr double kMemoryEvidence = 20;  // how much likelier the side of the working set a run's memory points to

// log P(Z > z) for a standard normal Z; past z = 8, where erfc underflows toward 0, its asymptote (Mills' ratio), so
// that particles that all miss a bound are still told apart by how far.
double log_survival(double z) {
  if (z < 8) return std::log(0.5 * std::erfc(z / std::sqrt(2.0)));
  return -0.5 * z * z - std::log(z * std::sqrt(2 * std::numbers::pi));
}

}  // namespace

std::string ResourceModel::family_of(const ConfigSpec& c) {
  if (c.gpus > 0) return "gpu:" + c.gpu_type;
  return "cpu:" + (c.cpu_family.empty() ? c.provider : c.cpu_family);
}

double ResourceModel::count_of(const ConfigSpec& c) {
  return (c.gpus > 0 ? c.gpus : std::max(1, c.cores)) * std::max(1, c.nodes);
}

const std::vector<double>& ResourceModel::log_phi(const std::string& family) const {
  std::lock_guard lock(phi_->mutex);
  auto [it, fresh] = phi_->by_family.try_emplace(family);
  if (fresh) {
    std::mt19937_64 rng(seed_mix(seed_, family));
    std::normal_distribution<double> z(0.0, kFamilySd);
    it->second.resize(particles_.size());
    for (auto& x : it->second) x = z(rng);
  }
  return it->second;
}

double ResourceModel::log_shape(size_t i, const ConfigSpec& cfg, const std::vector<double>& log_phi) const {
  const Particle& p = particles_[i];
  const double n = count_of(cfg);
  double shape = p.serial + (1 - p.serial) / n + (1 - p.serial) * n / (p.sweet * p.sweet);
  double log_t = log_phi[i] + std::log(shape);
  const double m = cfg.cluster_memory_gib();
  if (m > 0 && p.cliff_k > 1) {
    const double x = (std::log(m) - p.log_cliff_m) / kCliffWidth;
    if (x < 35) log_t += std::log1p((p.cliff_k - 1) / (1.0 + std::exp(x)));  // beyond, below() < 1e-15
  }
  return log_t;
}

Result<ResourceModel> ResourceModel::fit(std::span<const ResourcePoint> points, const ResourceOptions& opt) {
  if (points.empty()) return make_error(Code::invalid_argument, "resource model: no measured configs");
  for (const auto& p : points)
    if (!(p.learn > 0) || !std::isfinite(p.learn))
      return make_error(Code::invalid_argument, "resource model: learn time of " + p.cfg.config + " must be > 0");
  if (opt.particles < 1) return make_error(Code::invalid_argument, "resource model: particles must be >= 1");
  ResourceModel m;
  m.seed_ = opt.seed;
  const double lo = opt.memory_lo_gib > 0 ? opt.memory_lo_gib : kDefaultMemLo;
  const double hi = opt.memory_hi_gib > lo ? opt.memory_hi_gib : std::max(kDefaultMemHi, 2 * lo);
  const bool ranged = opt.memory_lo_gib > 0 && opt.memory_hi_gib > opt.memory_lo_gib;
  std::mt19937_64 rng(opt.seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  m.particles_.resize(opt.particles);
  for (auto& p : m.particles_) {
    p.serial = 0.005 * std::pow(100.0, u(rng));  // [0.005, 0.5]
    p.sweet = 4.0 * std::pow(128.0, u(rng));     // [4, 512]
    const bool cliff = u(rng) >= kNoCliff;
    p.cliff_k = cliff ? std::pow(kMaxCliff, u(rng)) : 1.0;
    // Uniform over the memory of the configs planned (docs/planner.md, "Where a cliff lies"); without that range,
    // scale-free over the wide default.
    p.log_cliff_m = ranged ? std::log(lo + (hi - lo) * u(rng)) : std::log(lo) + std::log(hi / lo) * u(rng);
  }
  if (std::none_of(points.begin(), points.end(), [](const ResourcePoint& p) { return !p.unfinished; }))
    return make_error(Code::invalid_argument, "resource model: no finished run");
  for (const auto& pt : points)
    if (!pt.unfinished) ++m.measured_families_[family_of(pt.cfg)];
  std::vector<double> log_w(m.particles_.size());
  std::vector<double> r(points.size());
  std::vector<const std::vector<double>*> phis;
  for (const auto& pt : points) phis.push_back(&m.log_phi(family_of(pt.cfg)));
  for (size_t i = 0; i < m.particles_.size(); ++i) {
    double mean = 0, finished = 0;
    for (size_t k = 0; k < points.size(); ++k) {
      r[k] = std::log(points[k].learn) - m.log_shape(i, points[k].cfg, *phis[k]);
      if (!points[k].unfinished) mean += r[k], ++finished;
    }
    mean /= finished;
    double log_like = 0;
    for (size_t k = 0; k < points.size(); ++k) {
      const double z = (r[k] - mean) / kFitSd;
      // An unfinished run: the chance that the config's learn time exceeds the seconds it ran.
      log_like += points[k].unfinished ? log_survival(z) : -0.5 * z * z;
    }
    m.particles_[i].log_a = mean;
    log_w[i] = log_like;
    for (const auto& pt : points) {
      const double mem = pt.cfg.cluster_memory_gib();
      if (!pt.memory_used || !(mem > 0)) continue;
      const Particle& p = m.particles_[i];
      const bool fits_here = p.cliff_k <= 1 || p.log_cliff_m <= std::log(mem);
      if ((*pt.memory_used >= kMemoryBound && fits_here) || (*pt.memory_used <= kMemoryFits && !fits_here))
        log_w[i] -= std::log(kMemoryEvidence);
    }
  }
  const double top = *std::max_element(log_w.begin(), log_w.end());
  m.weight_.resize(log_w.size());
  for (size_t i = 0; i < log_w.size(); ++i) m.weight_[i] = std::exp(log_w[i] - top);
  const double total = std::accumulate(m.weight_.begin(), m.weight_.end(), 0.0);
  for (size_t i = 0; i < m.weight_.size(); ++i) {
    m.weight_[i] /= total;
    if (m.weight_[i] > 1e-9) m.support_.push_back(i);  // the rest cannot move a mean or a spread
  }
  m.pick_ = std::discrete_distribution<size_t>(m.weight_.begin(), m.weight_.end());
  return m;
}

std::vector<double> ResourceModel::sample(const ConfigSpec& cfg, int count, std::mt19937_64& rng) const {
  const auto& phi = log_phi(family_of(cfg));
  // Draw i takes the same particle for every config (common random numbers), so draws across configs are
  // joint: one draw is one possible world, as P(pick within tolerance) needs.
  auto pick = pick_;
  std::mt19937_64 world(seed_);
  std::normal_distribution<double> z(0.0, 1.0);
  std::vector<double> out(std::max(0, count));
  for (auto& t : out) {
    const size_t i = pick(world);
    t = std::exp(particles_[i].log_a + log_shape(i, cfg, phi) + kFitSd * z(rng));
  }
  return out;
}

double ResourceModel::log_sd(const ConfigSpec& cfg) const {
  const auto& phi = log_phi(family_of(cfg));
  double mean = 0, sq = 0;
  for (size_t i : support_) {
    const double x = particles_[i].log_a + log_shape(i, cfg, phi);
    mean += weight_[i] * x;
    sq += weight_[i] * x * x;
  }
  return std::sqrt(std::max(0.0, sq - mean * mean) + kFitSd * kFitSd);
}

double ResourceModel::effective_particles() const {
  double s = 0;
  for (double w : weight_) s += w * w;
  return s > 0 ? 1.0 / s : 0.0;
}

bool ResourceModel::family_measured(const ConfigSpec& cfg) const { return measured_families_.contains(family_of(cfg)); }

}  // namespace tsum::billing
