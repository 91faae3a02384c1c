// The Keras `cifar10_cnn` example network, for 3x32x32 inputs and 10 classes:
//   Conv2D(32, 3x3, same, relu) -> Conv2D(32, 3x3, valid, relu) -> MaxPool 2x2 -> Dropout 0.25
//   -> Conv2D(64, 3x3, same, relu) -> Conv2D(64, 3x3, valid, relu) -> MaxPool 2x2 -> Dropout 0.25
//   -> Flatten (64x6x6) -> Dense 512 relu -> Dropout 0.5 -> Dense 10 (logits).
// 1,250,858 parameters. Convolutions run channels-last; Flatten uses the logical NCHW order. As in
// mnist_cnn, the relu before each pool runs after it (max and relu commute) on a quarter of the
// elements, and dropout masks come from FastDropout.
#pragma once

#include "workload/models/fast_dropout.h"
#include "workload/models/model.h"

namespace tsum::workload {

class Cifar10Cnn : public Model {
 public:
  std::vector<FastDropout*> dropout_streams() override { return {&dropout_}; }
  static constexpr const char* kName = "cifar10_cnn";

  Cifar10Cnn();
  torch::Tensor forward(const torch::Tensor& x) override;
  InputShape input_shape() const override { return {InputKind::image, 3, 32, 32, 0, 0, 10}; }

 private:
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::Conv2d conv2_{nullptr};
  torch::nn::Conv2d conv3_{nullptr};
  torch::nn::Conv2d conv4_{nullptr};
  torch::nn::Linear fc1_{nullptr};
  torch::nn::Linear fc2_{nullptr};
  FastDropout dropout_;
};

}  // namespace tsum::workload
