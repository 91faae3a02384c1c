#include "workload/models/cifar_small.h"

namespace tsum::workload {
namespace {

constexpr double kSmallDropout = 0.5;

}  // namespace

CifarSmall::CifarSmall() : Model(kName) {
  conv1_ = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 32, 3)));
  conv2_ = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 32, 3)));
  conv3_ = register_module("conv3", torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3)));
  fc_ = register_module("fc", torch::nn::Linear(64 * 2 * 2, 10));
  make_channels_last(*this);
}

torch::Tensor CifarSmall::forward(const torch::Tensor& x) {
  auto h = x.contiguous(torch::MemoryFormat::ChannelsLast);
  for (auto* conv : {&conv1_, &conv2_, &conv3_}) {
    h = torch::max_pool2d((*conv)->forward(h), 2).relu_();
  }
  h = dropout_(torch::flatten(h, 1), kSmallDropout, is_training());
  return fc_->forward(h);
}

}  // namespace tsum::workload
