// Non-negative least squares: minimize ||A x - b|| subject to x >= 0, by the active-set method of Lawson and
// Hanson ("Solving Least Squares Problems", 1974, ch. 23). Small dense problems (the scaling fits have 4
// unknowns); the inner unconstrained solves use Householder QR, not normal equations.
#pragma once

#include <vector>

#include "common/result.h"

namespace tsum::billing {

// A dense row-major matrix.
struct Matrix {
  int rows = 0;
  int cols = 0;
  std::vector<double> a;

  Matrix(int r, int c) : rows(r), cols(c), a(static_cast<size_t>(r) * c, 0.0) {}
  double& operator()(int r, int c) { return a[static_cast<size_t>(r) * cols + c]; }
  double operator()(int r, int c) const { return a[static_cast<size_t>(r) * cols + c]; }
};

// Unconstrained least squares over the columns `cols` of A (the other unknowns fixed at 0): returns a vector
// of A.cols entries. Columns that are numerically dependent on earlier ones get 0.
std::vector<double> least_squares(const Matrix& A, const std::vector<double>& b, const std::vector<int>& cols);

// x >= 0 minimizing ||A x - b||. invalid_argument when sizes disagree or an entry is not finite.
Result<std::vector<double>> nnls(const Matrix& A, const std::vector<double>& b);

}  // namespace tsum::billing
