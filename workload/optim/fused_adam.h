// Adam with a fused, single-pass update.
//
// Same algorithm, defaults, state and serialization as torch::optim::Adam (it is one, with step()
// overridden): for each parameter with a gradient,
//   g = grad + weight_decay * p
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g * g
//   p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// libtorch runs this as seven tensor ops a parameter, each a full pass over memory with two
// temporaries. Here dense float32 CPU parameters take one pass, split across the intra-op threads;
// the others (a GPU's, or an odd layout or type) take a multi-tensor path: seven _foreach_ kernels
// for all of them together, as PyTorch's default Adam does, which matters on a GPU where a small
// model's step is bound by kernel launches. amsgrad takes the stock Adam::step path.
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
