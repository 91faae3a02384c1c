#include "workload/fused_adam.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <cstdint>

namespace tsum::workload {
namespace {

constexpr std::int64_t kGrain = 1 << 15;

struct AdamScalars {
  float beta1;
  float beta2;
  float one_minus_beta1;
  float one_minus_beta2;
  float weight_decay;
  float inv_sqrt_bias_correction2;
  float eps;
  float neg_step_size;
};

template <bool kWeightDecay>
void fused_update(float* __restrict p, const float* __restrict g, float* __restrict m,
                  float* __restrict v, std::int64_t n, const AdamScalars& s) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float grad = kWeightDecay ? g[i] + s.weight_decay * p[i] : g[i];
    const float mi = m[i] * s.beta1 + s.one_minus_beta1 * grad;
    const float vi = v[i] * s.beta2 + s.one_minus_beta2 * grad * grad;
    m[i] = mi;
    v[i] = vi;
    p[i] += s.neg_step_size * (mi / (std::sqrt(vi) * s.inv_sqrt_bias_correction2 + s.eps));
  }
}

bool fusable(const torch::Tensor& p, const torch::Tensor& g, const torch::Tensor& m,
             const torch::Tensor& v) {
  for (const auto* t : {&p, &g, &m, &v}) {
    if (t->scalar_type() != torch::kFloat32 || !t->device().is_cpu() || t->is_sparse() ||
        !t->is_non_overlapping_and_dense() || t->strides() != p.strides()) {
      return false;
    }
  }
  return true;
}

}  // namespace

torch::Tensor FusedAdam::step(LossClosure closure) {
  for (const auto& group : param_groups_) {
    if (static_cast<const torch::optim::AdamOptions&>(group.options()).amsgrad()) {
      return torch::optim::Adam::step(std::move(closure));
    }
  }
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const torch::optim::AdamOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      const torch::Tensor& grad = p.grad();
      TORCH_CHECK(!grad.is_sparse(), "Adam does not support sparse gradients");
      const std::string key = c10::guts::to_string(p.unsafeGetTensorImpl());
      if (state_.find(key) == state_.end()) {
        auto fresh = std::make_unique<torch::optim::AdamParamState>();
        fresh->step(0);
        fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        state_[key] = std::move(fresh);
      }
      auto& state = static_cast<torch::optim::AdamParamState&>(*state_[key]);
      state.step(state.step() + 1);
      const double beta1 = std::get<0>(options.betas());
      const double beta2 = std::get<1>(options.betas());
      const double bias_correction1 = 1 - std::pow(beta1, state.step());
      const double bias_correction2 = 1 - std::pow(beta2, state.step());
      const double step_size = options.lr() / bias_correction1;
      torch::Tensor& exp_avg = state.exp_avg();
      torch::Tensor& exp_avg_sq = state.exp_avg_sq();

      if (!fusable(p, grad, exp_avg, exp_avg_sq)) {  // the stock formula, op by op
        const torch::Tensor g =
            options.weight_decay() != 0 ? grad.add(p, options.weight_decay()) : grad;
        exp_avg.mul_(beta1).add_(g, 1 - beta1);
        exp_avg_sq.mul_(beta2).addcmul_(g, g, 1 - beta2);
        const torch::Tensor denom =
            (exp_avg_sq.sqrt() / std::sqrt(bias_correction2)).add_(options.eps());
        p.addcdiv_(exp_avg, denom, -step_size);
        continue;
      }
      const AdamScalars s{static_cast<float>(beta1),
                          static_cast<float>(beta2),
                          static_cast<float>(1 - beta1),
                          static_cast<float>(1 - beta2),
                          static_cast<float>(options.weight_decay()),
                          static_cast<float>(1 / std::sqrt(bias_correction2)),
                          static_cast<float>(options.eps()),
                          static_cast<float>(-step_size)};
      float* pp = p.data_ptr<float>();
      const float* gp = grad.data_ptr<float>();
      float* mp = exp_avg.data_ptr<float>();
      float* vp = exp_avg_sq.data_ptr<float>();
      at::parallel_for(0, p.numel(), kGrain, [&](std::int64_t begin, std::int64_t end) {
        if (s.weight_decay != 0.0f) {
          fused_update<true>(pp + begin, gp + begin, mp + begin, vp + begin, end - begin, s);
        } else {
          fused_update<false>(pp + begin, gp + begin, mp + begin, vp + begin, end - begin, s);
        }
      });
    }
  }
  return loss;
}

}  // namespace tsum::workload
