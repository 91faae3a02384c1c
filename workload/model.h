// Base class for the networks tsum-train can run. A model maps a float batch shaped
// [N, channels, height, width] to logits [N, classes]. Concrete models live in their own files and
// are reachable by name through model_registry.h.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace tsum::workload {

struct InputShape {
  std::int64_t channels = 0;
  std::int64_t height = 0;
  std::int64_t width = 0;
  std::int64_t classes = 0;
};

class Model : public torch::nn::Module {
 public:
  explicit Model(const std::string& name) : torch::nn::Module(name) {}

  // Logits for a batch. Honors is_training() for dropout/batch-norm. May throw c10::Error on a
  // shape mismatch; callers catch at their boundary.
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;

  // The input the model expects and the number of classes it predicts.
  virtual InputShape input_shape() const = 0;

  // Number of trainable scalars.
  std::int64_t parameter_count() const {
    std::int64_t n = 0;
    for (const auto& p : parameters()) n += p.numel();
    return n;
  }
};

}  // namespace tsum::workload
