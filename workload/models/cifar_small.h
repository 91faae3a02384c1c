// A small CIFAR network, for 3x32x32 inputs and 10 classes: three blocks of
// Conv2D(3x3, valid, relu) + MaxPool 2x2 with 32, 32 and 64 filters (32 -> 15 -> 6 -> 2 pixels),
// then Flatten (64x2x2) -> Dropout 0.5 -> Dense 10 (logits). 31,210 parameters.
// Convolutions run channels-last; each relu runs after its pool (max and relu commute).
#pragma once

#include "workload/models/fast_dropout.h"
#include "workload/models/model.h"

namespace tsum::workload {

class CifarSmall : public Model {
 public:
  std::vector<FastDropout*> dropout_streams() override { return {&dropout_}; }
  static constexpr const char* kName = "cifar_small";

  CifarSmall();
  torch::Tensor forward(const torch::Tensor& x) override;
  InputShape input_shape() const override { return {InputKind::image, 3, 32, 32, 0, 0, 10}; }

 private:
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::Conv2d conv2_{nullptr};
  torch::nn::Conv2d conv3_{nullptr};
  torch::nn::Linear fc_{nullptr};
  FastDropout dropout_;
};

}  // namespace tsum::workload
