// The Keras `mnist_cnn` example network, for 1x28x28 inputs and 10 classes:
//   Conv2D(32, 3x3, relu) -> Conv2D(64, 3x3, relu) -> MaxPool 2x2 -> Dropout 0.25 -> Flatten
//   -> Dense 128 relu -> Dropout 0.5 -> Dense 10 (logits).
// 1,199,882 parameters.
//
// Computed exactly as written, with three speed-ups that do not change the math:
//   - conv weights and activations are channels-last (NHWC), which oneDNN convolves without
//     reordering and max-pools with a vectorized kernel; Flatten still uses the logical NCHW order,
//     so weights are interchangeable with a plain PyTorch model;
//   - the second relu runs after the pool (relu is monotonic, so max(relu(x)) == relu(max(x))) on
//     a quarter of the elements;
//   - dropout masks come from FastDropout instead of libtorch's per-element bernoulli_.
#pragma once

#include "workload/models/fast_dropout.h"
#include "workload/models/model.h"

namespace tsum::workload {

class MnistCnn : public Model {
 public:
  std::vector<FastDropout*> dropout_streams() override { return {&dropout_}; }
  static constexpr const char* kName = "mnist_cnn";

  MnistCnn();
  torch::Tensor forward(const torch::Tensor& x) override;
  InputShape input_shape() const override { return {InputKind::image, 1, 28, 28, 0, 0, 10}; }

 private:
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::Conv2d conv2_{nullptr};
  torch::nn::Linear fc1_{nullptr};
  torch::nn::Linear fc2_{nullptr};
  FastDropout dropout_;
};

}  // namespace tsum::workload
