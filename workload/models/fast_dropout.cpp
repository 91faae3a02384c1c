#include "workload/models/fast_dropout.h"

#include <cmath>
#include <limits>

namespace tsum::workload {
namespace {

std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

FastDropout::FastDropout() {
  std::uint64_t seed = static_cast<std::uint64_t>(
      torch::randint(std::numeric_limits<std::int64_t>::max(), {1}, torch::kInt64).item<std::int64_t>());
  for (auto& s : state_) s = splitmix64(seed);
}

std::uint64_t FastDropout::next() {
  const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
  const std::uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = rotl(state_[3], 45);
  return result;
}

torch::Tensor FastDropout::operator()(const torch::Tensor& x, double p, bool training) {
  if (!training || p <= 0.0) return x;
  if (p >= 1.0) return x * 0.0f;
  // Autocast (bf16/fp16) activations and CUDA tensors take libtorch's own dropout.
  if (!x.is_cpu() || x.scalar_type() != torch::kFloat) return torch::dropout(x, p, true);
  // An element is kept when its 32-bit draw is >= threshold: probability 1 - threshold/2^32.
  const auto threshold = static_cast<std::uint32_t>(std::llround(p * 4294967296.0));
  const float scale = static_cast<float>(1.0 / (1.0 - p));
  torch::Tensor mask = torch::empty_like(x, torch::TensorOptions().requires_grad(false));
  float* m = mask.data_ptr<float>();
  const std::int64_t n = mask.numel();
  std::int64_t i = 0;
  for (; i + 1 < n; i += 2) {
    const std::uint64_t r = next();
    m[i] = static_cast<std::uint32_t>(r) >= threshold ? scale : 0.0f;
    m[i + 1] = static_cast<std::uint32_t>(r >> 32) >= threshold ? scale : 0.0f;
  }
  if (i < n) m[i] = static_cast<std::uint32_t>(next()) >= threshold ? scale : 0.0f;
  return x * mask;
}

}  // namespace tsum::workload
