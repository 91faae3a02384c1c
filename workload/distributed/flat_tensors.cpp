#include "workload/distributed/flat_tensors.h"

namespace tsum::workload {

std::int64_t numel_of(const std::vector<torch::Tensor>& tensors) {
  std::int64_t n = 0;
  for (const auto& t : tensors) n += t.numel();
  return n;
}

void flatten_grads(const std::vector<torch::Tensor>& params, torch::Tensor& flat) {
  torch::NoGradGuard no_grad;
  std::int64_t offset = 0;
  for (const auto& p : params) {
    auto slice = flat.narrow(0, offset, p.numel());
    if (p.grad().defined()) {
      slice.copy_(p.grad().reshape(-1));
    } else {
      slice.zero_();
    }
    offset += p.numel();
  }
}

void grads_from_flat(const std::vector<torch::Tensor>& params, const torch::Tensor& flat) {
  std::int64_t offset = 0;
  for (auto p : params) {
    p.mutable_grad() = flat.narrow(0, offset, p.numel()).view_as(p);
    offset += p.numel();
  }
}

void flatten_values(const std::vector<torch::Tensor>& params, torch::Tensor& flat) {
  torch::NoGradGuard no_grad;
  std::int64_t offset = 0;
  for (const auto& p : params) {
    flat.narrow(0, offset, p.numel()).copy_(p.detach().reshape(-1));
    offset += p.numel();
  }
}

void values_from_flat(const std::vector<torch::Tensor>& params, const torch::Tensor& flat) {
  torch::NoGradGuard no_grad;
  std::int64_t offset = 0;
  for (const auto& p : params) {
    p.detach().copy_(flat.narrow(0, offset, p.numel()).view_as(p));
    offset += p.numel();
  }
}

}  // namespace tsum::workload
