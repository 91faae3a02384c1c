// The room workload/models/ owns the networks tsum-train runs (the Keras examples, ResNet-50) and the registry of
// models by name. It calls data/ for input shapes and common/.
//
// Base class for the networks tsum-train can run. A model declares what it reads (InputShape: an
// image batch [N, channels, height, width] of float32, or a token batch [N, length] of int64) and
// how its output is scored (LossKind). Concrete models live in their own files and are reachable by
// name through model_registry.h.
#pragma once

#include <torch/torch.h>

#include "workload/models/fast_dropout.h"

#include <cstdint>
#include <string>

namespace tsum::workload {

enum class InputKind { image, tokens };

// cross_entropy: logits [N, classes] against int64 labels in [0, classes).
// binary_cross_entropy: one logit [N, 1] against int64 labels in {0, 1} (sigmoid + BCE, fused).
enum class LossKind { cross_entropy, binary_cross_entropy };

struct InputShape {
  InputKind kind = InputKind::image;
  std::int64_t channels = 0;  // image inputs
  std::int64_t height = 0;
  std::int64_t width = 0;
  std::int64_t length = 0;   // token inputs: tokens per sequence
  std::int64_t vocab = 0;    // token inputs: ids are in [0, vocab)
  std::int64_t classes = 0;  // labels are in [0, classes)
};

class Model : public torch::nn::Module {
 public:
  explicit Model(const std::string& name) : torch::nn::Module(name) {}

  // Logits for a batch. Honors is_training() for dropout/batch-norm. May throw c10::Error on a
  // shape mismatch; callers catch at their boundary.
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;

  // The input the model expects and the number of classes it predicts.
  virtual InputShape input_shape() const = 0;

  virtual LossKind loss_kind() const { return LossKind::cross_entropy; }

  // The model's own dropout streams, whose state a checkpoint keeps (train_state.h).
  virtual std::vector<FastDropout*> dropout_streams() { return {}; }

  // For inference only, after eval() and to(device): folds what need not be computed apart (an eval-mode batch
  // norm into the convolution before it: the same function, one pass over the activations fewer). The model must
  // not be trained after it; a later parameter change is not seen. infer and serve call it.
  virtual void fold_for_inference() {}

  // Number of trainable scalars.
  std::int64_t parameter_count() const {
    std::int64_t n = 0;
    for (const auto& p : parameters()) n += p.numel();
    return n;
  }
};

// Restrides every 4-D parameter of `module` (conv weights) to channels-last in place; values and
// logical shapes are unchanged. Convolutions on channels-last inputs then run without reorders.
void make_channels_last(torch::nn::Module& module);

}  // namespace tsum::workload
