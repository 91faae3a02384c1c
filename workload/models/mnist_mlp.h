// The Keras `mnist_mlp` example network, for 1x28x28 inputs and 10 classes:
//   Flatten 784 -> Dense 512 relu -> Dropout 0.2 -> Dense 512 relu -> Dropout 0.2 -> Dense 10.
// 669,706 parameters. Dropout masks come from FastDropout.
#pragma once

#include "workload/models/fast_dropout.h"
#include "workload/models/model.h"

namespace tsum::workload {

class MnistMlp : public Model {
 public:
  std::vector<FastDropout*> dropout_streams() override { return {&dropout_}; }
  static constexpr const char* kName = "mnist_mlp";

  MnistMlp();
  torch::Tensor forward(const torch::Tensor& x) override;
  InputShape input_shape() const override { return {InputKind::image, 1, 28, 28, 0, 0, 10}; }

 private:
  torch::nn::Linear fc1_{nullptr};
  torch::nn::Linear fc2_{nullptr};
  torch::nn::Linear fc3_{nullptr};
  FastDropout dropout_;
};

}  // namespace tsum::workload
