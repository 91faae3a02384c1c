#include "workload/optim/nadam.h"

#include <cmath>

#include "workload/optim/optim_state.h"

namespace tsum::workload {
namespace {

double momentum_at(const NadamOptions& o, std::int64_t t) {
  return o.beta1() * (1.0 - 0.5 * std::pow(0.96, static_cast<double>(t) * o.schedule_decay()));
}

}  // namespace

torch::Tensor Nadam::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups_) {
    const auto& o = static_cast<const NadamOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      const torch::Tensor& g = p.grad();
      const auto key = optim_state_key(p);
      if (state_.find(key) == state_.end()) {
        auto fresh = std::make_unique<NadamParamState>();
        fresh->m(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        fresh->v(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        state_[key] = std::move(fresh);
      }
      auto& s = static_cast<NadamParamState&>(*state_[key]);
      const std::int64_t t = s.step() + 1;
      s.step(t);
      const double mu_t = momentum_at(o, t);
      const double mu_next = momentum_at(o, t + 1);
      const double schedule = s.m_schedule() * mu_t;
      const double schedule_next = schedule * mu_next;
      s.m_schedule(schedule);

      s.m().mul_(o.beta1()).add_(g, 1.0 - o.beta1());
      s.v().mul_(o.beta2()).addcmul_(g, g, 1.0 - o.beta2());
      const double v_correction = 1.0 - std::pow(o.beta2(), static_cast<double>(t));
      const torch::Tensor m_bar =
          g.mul((1.0 - mu_t) / (1.0 - schedule)).add_(s.m(), mu_next / (1.0 - schedule_next));
      const torch::Tensor denom = s.v().div(v_correction).sqrt_().add_(o.eps());
      p.addcdiv_(m_bar, denom, -o.lr());
    }
  }
  return loss;
}

}  // namespace tsum::workload
