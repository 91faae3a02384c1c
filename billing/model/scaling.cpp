#include "billing/model/scaling.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "billing/model/nnls.h"

namespace tsum::billing {

namespace {

constexpr double kExtrapolationPerDoubling = 0.10;
constexpr double kFitCv = 0.05;  // how far a prior curve may miss a measured point and still count as fitting

Status check_points(std::span<const ScalingPoint> points) {
  if (points.empty()) return make_error(Code::invalid_argument, "scaling: no measured points");
  for (const auto& p : points)
    if (!(p.n > 0) || !std::isfinite(p.n) || !(p.t >= 0) || !std::isfinite(p.t))
      return make_error(Code::invalid_argument, "scaling: points need n > 0 and t >= 0");
  return {};
}

std::vector<Theta> bootstrap_ernest(const Theta& fit, std::span<const ScalingPoint> points, int count,
                                    std::mt19937_64& rng) {
  std::vector<double> fitted, residuals;
  for (const auto& p : points) {
    fitted.push_back(ernest_predict(fit, p.n));
    residuals.push_back(p.t - fitted.back());
  }
  // Residuals of a 4-parameter fit to m points understate the noise by sqrt((m-4)/m); scale them back up.
  const double m = static_cast<double>(points.size());
  const double inflate = m > 4 ? std::sqrt(m / (m - 4)) : 1.0;
  std::uniform_int_distribution<size_t> pick(0, points.size() - 1);
  std::vector<Theta> out;
  out.reserve(count);
  std::vector<ScalingPoint> resampled(points.begin(), points.end());
  for (int b = 0; b < count; ++b) {
    for (size_t i = 0; i < resampled.size(); ++i)
      resampled[i].t = std::max(0.0, fitted[i] + inflate * residuals[pick(rng)]);
    auto theta = fit_ernest(resampled);
    out.push_back(theta ? *theta : fit);
  }
  return out;
}

std::vector<Theta> prior_ensemble(std::span<const ScalingPoint> points, int count, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const int draws = 8 * count;
  std::vector<Theta> curves;
  std::vector<double> log_w;
  for (int d = 0; d < draws; ++d) {
    double s = 0.005 * std::pow(100.0, u(rng));   // [0.005, 0.5]
    double sweet = 4.0 * std::pow(128.0, u(rng));  // [4, 512]
    auto shape = [&](double n) { return s + (1 - s) / n + (1 - s) * n / (sweet * sweet); };
    double num = 0, den = 0;
    for (const auto& p : points) {
      double f = shape(p.n), w = 1.0 / std::max(1e-9, p.t * p.t);
      num += w * f * p.t;
      den += w * f * f;
    }
    double a = den > 0 ? num / den : 0;
    double sse = 0;
    for (const auto& p : points) {
      double rel = (a * shape(p.n) - p.t) / std::max(1e-9, kFitCv * p.t);
      sse += rel * rel;
    }
    curves.push_back({a * s, a * (1 - s), 0.0, a * (1 - s) / (sweet * sweet)});
    log_w.push_back(-0.5 * sse);
  }
  double top = *std::max_element(log_w.begin(), log_w.end());
  std::vector<double> w;
  for (double lw : log_w) w.push_back(std::exp(lw - top));
  std::discrete_distribution<size_t> pick(w.begin(), w.end());
  std::vector<Theta> out;
  out.reserve(count);
  for (int i = 0; i < count; ++i) out.push_back(curves[pick(rng)]);
  return out;
}

}  // namespace

std::array<double, 4> ernest_features(double n) { return {1.0, 1.0 / n, std::log(n), n}; }

double ernest_predict(const Theta& theta, double n) {
  auto f = ernest_features(n);
  double t = 0;
  for (int j = 0; j < 4; ++j) t += theta[j] * f[j];
  return t;
}

Result<Theta> fit_ernest(std::span<const ScalingPoint> points) {
  if (auto s = check_points(points); !s) return s.error();
  Matrix A(static_cast<int>(points.size()), 4);
  std::vector<double> b;
  for (size_t i = 0; i < points.size(); ++i) {
    auto f = ernest_features(points[i].n);
    for (int j = 0; j < 4; ++j) A(static_cast<int>(i), j) = f[j];
    b.push_back(points[i].t);
  }
  auto x = nnls(A, b);
  if (!x) return x.error();
  return Theta{(*x)[0], (*x)[1], (*x)[2], (*x)[3]};
}

Result<ScalingModel> ScalingModel::fit(std::span<const ScalingPoint> points, const ScalingOptions& opt) {
  if (auto s = check_points(points); !s) return s.error();
  ScalingModel m;
  std::set<double> ns;
  for (const auto& p : points) ns.insert(p.n);
  m.distinct_n_ = static_cast<int>(ns.size());
  m.n_min_ = *ns.begin();
  m.n_max_ = *ns.rbegin();
  m.noise_cv_ = opt.noise_cv;
  std::mt19937_64 rng(opt.seed);
  const int count = std::max(1, opt.bootstrap);
  if (m.distinct_n_ >= 3) {
    auto theta = fit_ernest(points);
    if (!theta) return theta.error();
    m.ernest_ = *theta;
    m.curves_ = bootstrap_ernest(*theta, points, count, rng);
  } else {
    m.curves_ = prior_ensemble(points, count, rng);
  }
  return m;
}

std::vector<double> ScalingModel::sample(double n, int count, std::mt19937_64& rng) const {
  double doublings = 0;
  if (n < n_min_) doublings = std::log2(n_min_ / n);
  if (n > n_max_) doublings = std::log2(n / n_max_);
  const double extra_sd = kExtrapolationPerDoubling * doublings;
  std::normal_distribution<double> z(0.0, 1.0);
  std::vector<double> out;
  out.reserve(count);
  for (int i = 0; i < count; ++i) {
    // Draw i takes curve i for every count (common random numbers): draws across configs are joint, one draw
    // one possible curve, as P(pick within tolerance) needs. (A curve drawn at random per config made every
    // candidate's doubt independent of the others': the search stated P(within 5%) of 3-15% for picks that
    // were within 5% a third to a half of the time, bench/planner.sh.)
    double t = ernest_predict(curves_[static_cast<size_t>(i) % curves_.size()], n);
    if (extra_sd > 0) t *= std::exp(extra_sd * z(rng) - 0.5 * extra_sd * extra_sd);
    t *= 1.0 + noise_cv_ * z(rng);
    out.push_back(std::max(0.0, t));
  }
  return out;
}

double ScalingModel::mean(double n) const {
  double s = 0;
  for (const auto& c : curves_) s += ernest_predict(c, n);
  return s / static_cast<double>(curves_.size());
}

std::string ScalingModel::basis(double n) const {
  if (distinct_n_ < 3) return "sparse";
  return n < n_min_ || n > n_max_ ? "extrapolated" : "fitted";
}

}  // namespace tsum::billing
