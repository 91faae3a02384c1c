#include "workload/optim/fused_adam.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "workload/optim/optim_state.h"

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

// The parameters of one step that share a step count (and so the bias corrections) and take the multi-tensor
// path: each list is one operand of the _foreach_ ops.
struct MultiTensorBatch {
  std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs;
};

// Adam over whole lists of tensors: a handful of _foreach_ kernels for all of them, where the per-tensor formula
// launches seven kernels a parameter. On a GPU the small models' steps are launch-bound, so this is what
// PyTorch's default (foreach) Adam does too.
void multi_tensor_update(MultiTensorBatch& b, const torch::optim::AdamOptions& options, std::int64_t step) {
  const double beta1 = std::get<0>(options.betas());
  const double beta2 = std::get<1>(options.betas());
  const double bias_correction1 = 1 - std::pow(beta1, static_cast<double>(step));
  const double bias_correction2 = 1 - std::pow(beta2, static_cast<double>(step));
  std::vector<torch::Tensor> grads = options.weight_decay() != 0
                                         ? at::_foreach_add(b.grads, b.params, options.weight_decay())
                                         : b.grads;
  at::_foreach_mul_(b.exp_avgs, beta1);
  at::_foreach_add_(b.exp_avgs, grads, 1 - beta1);
  at::_foreach_mul_(b.exp_avg_sqs, beta2);
  at::_foreach_addcmul_(b.exp_avg_sqs, grads, grads, 1 - beta2);
  std::vector<torch::Tensor> denom = at::_foreach_sqrt(b.exp_avg_sqs);
  at::_foreach_div_(denom, std::sqrt(bias_correction2));
  at::_foreach_add_(denom, options.eps());
  at::_foreach_addcdiv_(b.params, b.exp_avgs, denom, -options.lr() / bias_correction1);
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
    std::map<std::int64_t, MultiTensorBatch> batches;  // by step count
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      const torch::Tensor& grad = p.grad();
      TORCH_CHECK(!grad.is_sparse(), "Adam does not support sparse gradients");
      const auto key = optim_state_key(p);
      if (state_.find(key) == state_.end()) {
        auto fresh = std::make_unique<torch::optim::AdamParamState>();
        fresh->step(0);
        fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        state_[key] = std::move(fresh);
      }
      auto& state = static_cast<torch::optim::AdamParamState&>(*state_[key]);
      state.step(state.step() + 1);
      torch::Tensor& exp_avg = state.exp_avg();
      torch::Tensor& exp_avg_sq = state.exp_avg_sq();

      if (!fusable(p, grad, exp_avg, exp_avg_sq)) {  // a GPU's, or an odd CPU layout: multi-tensor, below
        MultiTensorBatch& b = batches[state.step()];
        b.params.push_back(p);
        b.grads.push_back(grad);
        b.exp_avgs.push_back(exp_avg);
        b.exp_avg_sqs.push_back(exp_avg_sq);
        continue;
      }
      const double beta1 = std::get<0>(options.betas());
      const double beta2 = std::get<1>(options.betas());
      const double bias_correction1 = 1 - std::pow(beta1, state.step());
      const double bias_correction2 = 1 - std::pow(beta2, state.step());
      const double step_size = options.lr() / bias_correction1;
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
    for (auto& [step, batch] : batches) multi_tensor_update(batch, options, step);
  }
  return loss;
}

}  // namespace tsum::workload
