#include "workload/optim/loss_scaler.h"

namespace tsum::workload {

bool LossScaler::unscale_and_update(const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> finite;
  for (const auto& p : params) {
    torch::Tensor g = p.grad();
    if (!g.defined()) continue;
    g.mul_(1.0 / scale_);
    finite.push_back(torch::isfinite(g).all());
  }
  // One device-to-host sync per step, however many parameters.
  const bool ok = finite.empty() || torch::stack(finite).all().item<bool>();
  if (!ok) {
    scale_ *= options_.backoff_factor;
    clean_steps_ = 0;
    ++skipped_;
    return false;
  }
  if (++clean_steps_ >= options_.growth_interval) {
    scale_ *= options_.growth_factor;
    clean_steps_ = 0;
  }
  return true;
}

}  // namespace tsum::workload
