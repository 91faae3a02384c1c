// Learn time across machine families, from the resources configs share. Pure math, no I/O.
//
// A per-family scaling curve (scaling.h) predicts a config only from measured configs of its own family, and
// over one count. Real traces need more: a memory-optimised family runs a job several times faster than a
// compute-optimised one of the same cores once the job's data fits in memory, and a family with no run yet
// still has cores and memory in common with the measured ones. This model sees a config as
//   C = cores × nodes (GPUs × nodes on GPU configs),   M = memory_gib × nodes,   its family f
// and its learn time as
//   t = a · φ_f · (s + (1-s)/C + (1-s)·C/c*²) · (1 + (K-1)·below(M, M*))
// an Amdahl curve with a communication term (the prior_ensemble shape of scaling.cpp), a family speed φ_f,
// and a memory cliff: K times slower while M is below the job's working set M* (below() is a logistic step
// over about 5% of M). It assumes only that more cores help up to a point and more memory never hurts.
//
// The unknowns are a particle ensemble drawn from the prior:
//   s log-uniform [0.005, 0.5];  c* log-uniform [4, 512];  φ_f log-normal(0, kFamilySd) per family;
//   no cliff (K = 1) with probability kNoCliff, else K log-uniform [1, 30] and M* uniform over the memory
//   range of the configs being planned (Scout's three jobs with a cliff have it in the upper half of their
//   log-memory range, where a log-uniform prior puts too little: docs/planner.md), or log-uniform over a wide
//   default where that range is not given;
// the scale a of each particle is fitted to the measured configs in log space, and the particles are weighted
// by how well they fit (Gaussian log-residuals of sd kFitSd, importance sampling). A prediction samples a
// particle by weight, then log-normal model error of sd kFitSd: so a config close (in C, M and family) to
// measured ones is predicted tightly, one that must reach across families or past the measured memory range
// widely, and log_sd() says by how much. What a run's machine saw of its memory (ResourcePoint::memory_used) weighs
// the particles too: a run that filled its machine's memory makes a working set at or below that memory, or no
// cliff at all, kMemoryEvidence times less likely; a run that used at most half of it does the same to a working
// set above it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "billing/measured_run.h"
#include "common/result.h"

namespace tsum::billing {

// A seed for one named stream of random numbers drawn from a model's seed (the same name, the same stream).
inline uint64_t seed_mix(uint64_t seed, const std::string& name) {
  return seed ^ (std::hash<std::string>{}(name) * 0x9E3779B97F4A7C15ull);
}

struct ResourcePoint {
  ConfigSpec cfg;
  double learn = 0;  // seconds of one full run (mean over its runs)
  // Its peak resident memory over the machine's memory (MeasuredRun::memory_used): at or above
  // kMemoryBound the job's working set exceeds the config's memory, at or below kMemoryFits it fits.
  std::optional<double> memory_used;
  // A run that did not finish (MeasuredRun::failed): `learn` is only a lower bound on the config's learn time,
  // the seconds it learned before it stopped.
  bool unfinished = false;
};

inline constexpr double kMemoryBound = 0.9;
inline constexpr double kMemoryFits = 0.5;

struct ResourceOptions {
  int particles = 6000;
  double memory_lo_gib = 0;  // range of M* in the prior; 0 = [1 GiB, 64 TiB]
  double memory_hi_gib = 0;
  uint64_t seed = 1;
};

class ResourceModel {
 public:
  // invalid_argument for no points or a learn time <= 0.
  static Result<ResourceModel> fit(std::span<const ResourcePoint> points, const ResourceOptions& opt);

  // `count` samples of one run's learn time on cfg.
  std::vector<double> sample(const ConfigSpec& cfg, int count, std::mt19937_64& rng) const;
  // The spread of log learn time at cfg over the weighted particles plus model error: how far it reached.
  double log_sd(const ConfigSpec& cfg) const;
  // Effective number of particles (1 / Σw²): how much of the prior the measurements left standing.
  double effective_particles() const;
  // True when a measured config shares cfg's family.
  bool family_measured(const ConfigSpec& cfg) const;

  // The family key ("cpu:<family>", "gpu:<type>") and the count C a config scales over.
  static std::string family_of(const ConfigSpec& cfg);
  static double count_of(const ConfigSpec& cfg);

 private:
  struct Particle {
    double serial, sweet, cliff_k, log_cliff_m, log_a = 0;
  };
  double log_shape(size_t particle, const ConfigSpec& cfg, const std::vector<double>& log_phi) const;
  const std::vector<double>& log_phi(const std::string& family) const;  // log φ_f per particle, cached

  std::vector<Particle> particles_;
  std::vector<double> weight_;  // normalised
  std::vector<size_t> support_;  // particles of weight > 1e-9
  std::discrete_distribution<size_t> pick_;
  std::map<std::string, int> measured_families_;
  struct PhiCache {
    std::mutex mutex;
    std::map<std::string, std::vector<double>> by_family;  // node-based: references stay valid
  };
  std::shared_ptr<PhiCache> phi_ = std::make_shared<PhiCache>();
  uint64_t seed_ = 1;
};

}  // namespace tsum::billing
