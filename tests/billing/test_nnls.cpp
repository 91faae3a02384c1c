#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "billing/model/nnls.h"
#include "billing/model/scaling.h"

using namespace tsum::billing;

namespace {

Matrix matrix(std::initializer_list<std::initializer_list<double>> rows) {
  Matrix m(static_cast<int>(rows.size()), static_cast<int>(rows.begin()->size()));
  int r = 0;
  for (const auto& row : rows) {
    int c = 0;
    for (double v : row) m(r, c++) = v;
    ++r;
  }
  return m;
}

}  // namespace

TEST_CASE("nnls recovers a non-negative solution exactly") {
  auto A = matrix({{1, 0, 1}, {0, 1, 1}, {1, 1, 0}, {2, 1, 1}});
  std::vector<double> x_true = {1.5, 0.25, 2.0};
  std::vector<double> b(4, 0.0);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) b[i] += A(i, j) * x_true[j];
  auto x = nnls(A, b);
  REQUIRE(x.ok());
  for (int j = 0; j < 3; ++j) CHECK((*x)[j] == doctest::Approx(x_true[j]).epsilon(1e-9));
}

TEST_CASE("nnls clamps where unconstrained least squares would go negative") {
  // Unconstrained: b = 1*col0 - 1*col1. With x >= 0 the best is x1 = 0 and x0 the projection of b on col0.
  auto A = matrix({{1, 0}, {0, 1}, {1, 1}});
  std::vector<double> b = {1, -1, 0};
  auto x = nnls(A, b);
  REQUIRE(x.ok());
  CHECK((*x)[1] == 0);
  CHECK((*x)[0] == doctest::Approx(0.5));  // minimizes (x0-1)^2 + x0^2
  // All-negative target: the answer is zero.
  auto z = nnls(A, {-1, -2, -3});
  REQUIRE(z.ok());
  CHECK((*z)[0] == 0);
  CHECK((*z)[1] == 0);
}

TEST_CASE("nnls satisfies the Kuhn-Tucker conditions on random problems") {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> z(0, 1);
  for (int trial = 0; trial < 50; ++trial) {
    Matrix A(12, 5);
    for (auto& v : A.a) v = z(rng);
    std::vector<double> b(12);
    for (auto& v : b) v = z(rng);
    auto x = nnls(A, b);
    REQUIRE(x.ok());
    std::vector<double> r(b);
    for (int i = 0; i < 12; ++i)
      for (int j = 0; j < 5; ++j) r[i] -= A(i, j) * (*x)[j];
    for (int j = 0; j < 5; ++j) {
      double w = 0;
      for (int i = 0; i < 12; ++i) w += A(i, j) * r[i];
      CHECK((*x)[j] >= 0);
      if ((*x)[j] > 1e-9) CHECK(std::fabs(w) < 1e-8);  // free variables: zero gradient
      else CHECK(w < 1e-8);                             // bound variables: gradient points outward
    }
  }
}

TEST_CASE("nnls rejects mismatched sizes and non-finite input") {
  Matrix A(3, 2);
  CHECK_FALSE(nnls(A, {1, 2}).ok());
  A(0, 0) = NAN;
  CHECK_FALSE(nnls(A, {1, 2, 3}).ok());
}

TEST_CASE("the Ernest fit recovers a known curve over core counts") {
  Theta truth = {30, 1200, 5, 0.8};  // t = 30 + 1200/n + 5 log n + 0.8 n
  std::vector<ScalingPoint> pts;
  for (double n : {1, 2, 4, 8, 16, 32, 64}) pts.push_back({n, ernest_predict(truth, n)});
  auto fit = fit_ernest(pts);
  REQUIRE(fit.ok());
  for (int j = 0; j < 4; ++j) CHECK((*fit)[j] == doctest::Approx(truth[j]).epsilon(1e-6));
  // An Amdahl curve (no log or linear term) comes back with those terms at zero, never negative.
  std::vector<ScalingPoint> amdahl;
  for (double n : {1, 2, 4, 8, 16}) amdahl.push_back({n, 100 + 900 / n});
  auto a = fit_ernest(amdahl);
  REQUIRE(a.ok());
  CHECK((*a)[0] == doctest::Approx(100).epsilon(1e-6));
  CHECK((*a)[1] == doctest::Approx(900).epsilon(1e-6));
  CHECK((*a)[2] == doctest::Approx(0).epsilon(1e-6));
  CHECK((*a)[3] == doctest::Approx(0).epsilon(1e-6));
}

TEST_CASE("the scaling model interpolates a fitted curve and widens when it extrapolates") {
  Theta truth = {20, 2000, 0, 1.5};
  std::vector<ScalingPoint> pts;
  for (double n : {2, 4, 8, 16}) pts.push_back({n, ernest_predict(truth, n)});
  auto m = ScalingModel::fit(pts, {200, 0.02, 3});
  REQUIRE(m.ok());
  CHECK(m->ernest().has_value());
  CHECK(m->basis(6) == "fitted");
  CHECK(m->basis(64) == "extrapolated");
  CHECK(m->mean(6) == doctest::Approx(ernest_predict(truth, 6)).epsilon(0.01));
  std::mt19937_64 rng(1);
  auto spread = [&](double n) {
    auto s = m->sample(n, 4000, rng);
    double mean = 0, var = 0;
    for (double x : s) mean += x;
    mean /= s.size();
    for (double x : s) var += (x - mean) * (x - mean);
    return std::sqrt(var / s.size()) / mean;
  };
  CHECK(spread(8) == doctest::Approx(0.02).epsilon(0.3));  // run-to-run noise only
  CHECK(spread(64) > 2 * spread(8));                        // two doublings past the data
}

TEST_CASE("one measured count gives a prior ensemble anchored at that point") {
  std::vector<ScalingPoint> pts = {{8, 1000}};
  auto m = ScalingModel::fit(pts, {400, 0.02, 5});
  REQUIRE(m.ok());
  CHECK_FALSE(m->ernest().has_value());
  CHECK(m->basis(8) == "sparse");
  CHECK(m->mean(8) == doctest::Approx(1000).epsilon(0.01));
  // Fewer cores are slower, on every curve of the ensemble (s < 1 and the sweet spot is at >= 4 cores).
  CHECK(m->mean(1) > 1000);
  CHECK(m->mean(1) < 8000);
}
