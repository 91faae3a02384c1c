// Learn-time scaling over a count n: cores within one CPU family, or GPUs of one type. Pure math, no I/O.
//
// With measurements at 3 or more distinct n, the Ernest model (Venkataraman et al., NSDI 2016)
//   t(n) = θ0 + θ1/n + θ2·log n + θ3·n,   θ >= 0
// is fitted by NNLS, and its uncertainty comes from a residual bootstrap (refits on fitted values plus
// resampled residuals). With 1 or 2 distinct n Ernest's four terms are not identified, so the model is a prior
// ensemble instead: Amdahl curves with a communication term, t(n) = a·(s + (1-s)/n + (1-s)·n/n*²), with the
// serial fraction s log-uniform in [0.005, 0.5] and the fastest count n* log-uniform in [4, 512]; each curve's
// scale a is fitted to the points and the curves are reweighted by how well they fit (importance sampling).
// Both are kept as a set of curves in Ernest form; predictions sample a curve, then run-to-run noise.
// Beyond the measured range of n the spread grows by 10% per doubling of distance, since neither model
// knows where a real curve bends.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"

namespace tsum::billing {

struct ScalingPoint {
  double n = 1;  // > 0
  double t = 0;  // seconds, >= 0
};

using Theta = std::array<double, 4>;

std::array<double, 4> ernest_features(double n);
double ernest_predict(const Theta& theta, double n);

// The NNLS fit of the Ernest model to points (at least one, all n > 0 and t >= 0).
Result<Theta> fit_ernest(std::span<const ScalingPoint> points);

struct ScalingOptions {
  int bootstrap = 200;     // Ernest refits, or prior-ensemble curves
  double noise_cv = 0.03;  // run-to-run relative spread of a single run
  uint64_t seed = 1;
};

class ScalingModel {
 public:
  // invalid_argument on no points or bad values.
  static Result<ScalingModel> fit(std::span<const ScalingPoint> points, const ScalingOptions& opt);

  // `count` samples of one run's learn time at n: a curve, times run-to-run noise, times extrapolation spread.
  std::vector<double> sample(double n, int count, std::mt19937_64& rng) const;
  // The mean over curves (no run noise) at n.
  double mean(double n) const;
  // "fitted" inside the measured range of n, "extrapolated" outside it, "sparse" when fewer than 3 distinct n
  // were measured (the curve's shape then comes from the prior ensemble).
  std::string basis(double n) const;
  // The Ernest fit when there were 3 or more distinct n.
  const std::optional<Theta>& ernest() const { return ernest_; }
  int distinct_n() const { return distinct_n_; }

 private:
  std::vector<Theta> curves_;
  std::optional<Theta> ernest_;
  double noise_cv_ = 0.03;
  double n_min_ = 1;
  double n_max_ = 1;
  int distinct_n_ = 0;
};

}  // namespace tsum::billing
