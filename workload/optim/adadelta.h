// Adadelta (Zeiler 2012) as Keras implements it, with Keras's defaults lr 1.0, rho 0.95, eps 1e-7.
// libtorch 1.13's C++ API has no Adadelta. For each parameter with gradient g:
//   a   = rho * a + (1 - rho) * g^2
//   u   = g * sqrt(d + eps) / sqrt(a + eps)
//   p  -= lr * u
//   d   = rho * d + (1 - rho) * u^2
#pragma once

#include <torch/torch.h>

#include <vector>

namespace tsum::workload {

struct AdadeltaOptions : public torch::optim::OptimizerCloneableOptions<AdadeltaOptions> {
  explicit AdadeltaOptions(double lr = 1.0) : lr_(lr) {}
  TORCH_ARG(double, lr);
  TORCH_ARG(double, rho) = 0.95;
  TORCH_ARG(double, eps) = 1e-7;

  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
};

struct AdadeltaParamState : public torch::optim::OptimizerCloneableParamState<AdadeltaParamState> {
  TORCH_ARG(torch::Tensor, square_avg);  // a
  TORCH_ARG(torch::Tensor, delta_avg);   // d
};

class Adadelta : public torch::optim::Optimizer {
 public:
  Adadelta(const std::vector<torch::Tensor>& params, AdadeltaOptions options = AdadeltaOptions())
      : torch::optim::Optimizer({torch::optim::OptimizerParamGroup(params)},
                                std::make_unique<AdadeltaOptions>(options)) {}

  torch::Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace tsum::workload
