#include "workload/models/cifar10_cnn.h"

namespace tsum::workload {
namespace {

constexpr double kConvDropout = 0.25;
constexpr double kDenseDropout = 0.5;

torch::nn::Conv2d conv3x3(std::int64_t in, std::int64_t out, bool same) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 3).padding(same ? 1 : 0));
}

}  // namespace

Cifar10Cnn::Cifar10Cnn() : Model(kName) {
  conv1_ = register_module("conv1", conv3x3(3, 32, true));
  conv2_ = register_module("conv2", conv3x3(32, 32, false));
  conv3_ = register_module("conv3", conv3x3(32, 64, true));
  conv4_ = register_module("conv4", conv3x3(64, 64, false));
  fc1_ = register_module("fc1", torch::nn::Linear(64 * 6 * 6, 512));
  fc2_ = register_module("fc2", torch::nn::Linear(512, 10));
  make_channels_last(*this);
}

torch::Tensor Cifar10Cnn::forward(const torch::Tensor& x) {
  // In-place relu is safe: conv, pool and linear backward need their inputs, not their outputs.
  auto h = conv1_->forward(x.contiguous(torch::MemoryFormat::ChannelsLast)).relu_();
  h = torch::max_pool2d(conv2_->forward(h), 2).relu_();
  h = dropout_(h, kConvDropout, is_training());
  h = conv3_->forward(h).relu_();
  h = torch::max_pool2d(conv4_->forward(h), 2).relu_();
  h = dropout_(h, kConvDropout, is_training());
  h = fc1_->forward(torch::flatten(h, 1)).relu_();
  h = dropout_(h, kDenseDropout, is_training());
  return fc2_->forward(h);
}

}  // namespace tsum::workload
