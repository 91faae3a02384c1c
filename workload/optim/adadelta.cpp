#include "workload/optim/adadelta.h"

#include "workload/optim/optim_state.h"

namespace tsum::workload {

torch::Tensor Adadelta::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups_) {
    const auto& o = static_cast<const AdadeltaOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      const torch::Tensor& g = p.grad();
      const auto key = optim_state_key(p);
      if (state_.find(key) == state_.end()) {
        auto fresh = std::make_unique<AdadeltaParamState>();
        fresh->square_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        fresh->delta_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        state_[key] = std::move(fresh);
      }
      auto& s = static_cast<AdadeltaParamState&>(*state_[key]);
      s.square_avg().mul_(o.rho()).addcmul_(g, g, 1.0 - o.rho());
      const torch::Tensor update =
          s.delta_avg().add(o.eps()).sqrt_().div_(s.square_avg().add(o.eps()).sqrt_()).mul_(g);
      p.add_(update, -o.lr());
      s.delta_avg().mul_(o.rho()).addcmul_(update, update, 1.0 - o.rho());
    }
  }
  return loss;
}

}  // namespace tsum::workload
