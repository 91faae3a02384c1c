// Nadam as Keras implements it (keras.optimizers.Nadam, tf.keras legacy): Adam with Nesterov
// momentum after Dozat (2016), with the warming momentum schedule
//   mu_t = beta1 * (1 - 0.5 * 0.96^(t * schedule_decay))
// For each parameter with gradient g, at step t = 1, 2, ... (prod_t = mu_1 * ... * mu_t):
//   g'  = g / (1 - prod_t)
//   m   = beta1 * m + (1 - beta1) * g          m'  = m / (1 - prod_t * mu_{t+1})
//   v   = beta2 * v + (1 - beta2) * g^2        v'  = v / (1 - beta2^t)
//   m_bar = (1 - mu_t) * g' + mu_{t+1} * m'
//   p  -= lr * m_bar / (sqrt(v') + eps)
// Defaults are Keras's: lr 0.002, beta1 0.9, beta2 0.999, eps 1e-7, schedule_decay 0.004.
// libtorch 1.13's C++ API has no Nadam.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace tsum::workload {

struct NadamOptions : public torch::optim::OptimizerCloneableOptions<NadamOptions> {
  explicit NadamOptions(double lr = 0.002) : lr_(lr) {}
  TORCH_ARG(double, lr);
  TORCH_ARG(double, beta1) = 0.9;
  TORCH_ARG(double, beta2) = 0.999;
  TORCH_ARG(double, eps) = 1e-7;
  TORCH_ARG(double, schedule_decay) = 0.004;

  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
};

struct NadamParamState : public torch::optim::OptimizerCloneableParamState<NadamParamState> {
  TORCH_ARG(std::int64_t, step) = 0;
  TORCH_ARG(double, m_schedule) = 1.0;  // prod_t
  TORCH_ARG(torch::Tensor, m);
  TORCH_ARG(torch::Tensor, v);
};

class Nadam : public torch::optim::Optimizer {
 public:
  Nadam(const std::vector<torch::Tensor>& params, NadamOptions options = NadamOptions())
      : torch::optim::Optimizer({torch::optim::OptimizerParamGroup(params)},
                                std::make_unique<NadamOptions>(options)) {}

  torch::Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace tsum::workload
