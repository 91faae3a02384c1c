// Adam with a fused, single-pass update.
//
// Same algorithm, defaults, state and serialization as torch::optim::Adam (it is one, with step()
// overridden): for each parameter with a gradient,
//   g = grad + weight_decay * p
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g * g
//   p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// libtorch 1.13 runs this as seven tensor ops, each a full pass over memory with two temporaries;
// here it is one pass, split across the intra-op threads. Parameters whose tensors are not all
// dense float32 with identical strides, and amsgrad, take the stock Adam::step path.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace tsum::workload {

class FusedAdam : public torch::optim::Adam {
 public:
  FusedAdam(const std::vector<torch::Tensor>& params, torch::optim::AdamOptions options)
      : torch::optim::Adam(params, std::move(options)) {}

  torch::Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace tsum::workload
