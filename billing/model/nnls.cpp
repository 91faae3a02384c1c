#include "billing/model/nnls.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tsum::billing {

namespace {

// A^T (b - A x).
std::vector<double> gradient(const Matrix& A, const std::vector<double>& b, const std::vector<double>& x) {
  std::vector<double> r(b);
  for (int i = 0; i < A.rows; ++i)
    for (int j = 0; j < A.cols; ++j) r[i] -= A(i, j) * x[j];
  std::vector<double> w(A.cols, 0.0);
  for (int i = 0; i < A.rows; ++i)
    for (int j = 0; j < A.cols; ++j) w[j] += A(i, j) * r[i];
  return w;
}

double column_scale(const Matrix& A) {
  double s = 0;
  for (double v : A.a) s = std::max(s, std::fabs(v));
  return s;
}

}  // namespace

std::vector<double> least_squares(const Matrix& A, const std::vector<double>& b, const std::vector<int>& cols) {
  const int m = A.rows;
  const int k = static_cast<int>(cols.size());
  Matrix R(m, k);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < k; ++j) R(i, j) = A(i, cols[j]);
  std::vector<double> y(b);
  std::vector<bool> dependent(k, false);
  const double tiny = 1e-12 * std::max(1.0, column_scale(R));
  // Householder QR, applying each reflection to y as we go.
  for (int j = 0; j < k && j < m; ++j) {
    double norm = 0;
    for (int i = j; i < m; ++i) norm += R(i, j) * R(i, j);
    norm = std::sqrt(norm);
    if (norm <= tiny) {
      dependent[j] = true;
      continue;
    }
    double alpha = R(j, j) > 0 ? -norm : norm;
    std::vector<double> v(m, 0.0);
    for (int i = j; i < m; ++i) v[i] = R(i, j);
    v[j] -= alpha;
    double vv = 0;
    for (int i = j; i < m; ++i) vv += v[i] * v[i];
    if (vv <= 0) continue;
    for (int c = j; c < k; ++c) {
      double d = 0;
      for (int i = j; i < m; ++i) d += v[i] * R(i, c);
      d = 2 * d / vv;
      for (int i = j; i < m; ++i) R(i, c) -= d * v[i];
    }
    double d = 0;
    for (int i = j; i < m; ++i) d += v[i] * y[i];
    d = 2 * d / vv;
    for (int i = j; i < m; ++i) y[i] -= d * v[i];
  }
  for (int j = m; j < k; ++j) dependent[j] = true;  // more unknowns than equations
  std::vector<double> z(k, 0.0);
  for (int j = std::min(k, m) - 1; j >= 0; --j) {
    if (dependent[j] || std::fabs(R(j, j)) <= tiny) continue;
    double s = y[j];
    for (int c = j + 1; c < k; ++c) s -= R(j, c) * z[c];
    z[j] = s / R(j, j);
  }
  std::vector<double> x(A.cols, 0.0);
  for (int j = 0; j < k; ++j) x[cols[j]] = z[j];
  return x;
}

Result<std::vector<double>> nnls(const Matrix& A, const std::vector<double>& b) {
  if (static_cast<int>(b.size()) != A.rows || A.cols <= 0 || static_cast<int>(A.a.size()) != A.rows * A.cols)
    return make_error(Code::invalid_argument, "nnls: A is " + std::to_string(A.rows) + "x" + std::to_string(A.cols) +
                                                  " but b has " + std::to_string(b.size()) + " entries");
  for (double v : A.a)
    if (!std::isfinite(v)) return make_error(Code::invalid_argument, "nnls: A has a non-finite entry");
  for (double v : b)
    if (!std::isfinite(v)) return make_error(Code::invalid_argument, "nnls: b has a non-finite entry");

  const int n = A.cols;
  std::vector<double> x(n, 0.0);
  std::vector<bool> passive(n, false);
  double bnorm = 0;
  for (double v : b) bnorm = std::max(bnorm, std::fabs(v));
  const double tol = 1e-10 * std::max(1.0, column_scale(A)) * std::max(1.0, bnorm) * std::max(1, A.rows);
  const int max_outer = 3 * n + 10;
  for (int outer = 0; outer < max_outer; ++outer) {
    auto w = gradient(A, b, x);
    int t = -1;
    double best = tol;
    for (int j = 0; j < n; ++j)
      if (!passive[j] && w[j] > best) best = w[j], t = j;
    if (t < 0) break;  // Kuhn-Tucker conditions hold
    passive[t] = true;
    for (int inner = 0; inner < 3 * n + 10; ++inner) {
      std::vector<int> cols;
      for (int j = 0; j < n; ++j)
        if (passive[j]) cols.push_back(j);
      auto s = least_squares(A, b, cols);
      bool feasible = true;
      for (int j : cols) feasible = feasible && s[j] > 0;
      if (feasible) {
        x = s;
        break;
      }
      // Step from x toward s as far as feasibility allows, then drop the variables that hit zero.
      double alpha = std::numeric_limits<double>::infinity();
      for (int j : cols)
        if (s[j] <= 0) alpha = std::min(alpha, x[j] / (x[j] - s[j]));
      for (int j = 0; j < n; ++j) x[j] += alpha * (s[j] - x[j]);
      for (int j : cols)
        if (x[j] <= 1e-14 * std::max(1.0, std::fabs(s[j]))) passive[j] = false, x[j] = 0;
      if (std::none_of(cols.begin(), cols.end(), [&](int j) { return passive[j]; })) break;
    }
  }
  for (double& v : x) v = std::max(0.0, v);
  return x;
}

}  // namespace tsum::billing
