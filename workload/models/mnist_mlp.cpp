#include "workload/models/mnist_mlp.h"

namespace tsum::workload {
namespace {

constexpr double kMlpDropout = 0.2;

}  // namespace

MnistMlp::MnistMlp() : Model(kName) {
  fc1_ = register_module("fc1", torch::nn::Linear(28 * 28, 512));
  fc2_ = register_module("fc2", torch::nn::Linear(512, 512));
  fc3_ = register_module("fc3", torch::nn::Linear(512, 10));
}

torch::Tensor MnistMlp::forward(const torch::Tensor& x) {
  // In-place relu is safe: linear backward needs its input, not its output.
  auto h = fc1_->forward(torch::flatten(x, 1)).relu_();
  h = dropout_(h, kMlpDropout, is_training());
  h = fc2_->forward(h).relu_();
  h = dropout_(h, kMlpDropout, is_training());
  return fc3_->forward(h);
}

}  // namespace tsum::workload
