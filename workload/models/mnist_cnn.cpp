#include "workload/models/mnist_cnn.h"

namespace tsum::workload {
namespace {

constexpr double kConvDropout = 0.25;
constexpr double kDenseDropout = 0.5;
constexpr auto kChannelsLast = torch::MemoryFormat::ChannelsLast;

// `t` (4-D) laid out and flagged channels-last. With one channel NCHW and NHWC are the same bytes,
// but libtorch reads NCHW strides as "contiguous", so conv1 would run NCHW and conv2 would then
// reorder its input and gradient; restriding (a view, no copy) keeps the whole chain in NHWC.
torch::Tensor channels_last(const torch::Tensor& t) {
  if (t.size(1) != 1) return t.contiguous(kChannelsLast);
  const torch::Tensor dense = t.contiguous();
  const std::int64_t h = t.size(2);
  const std::int64_t w = t.size(3);
  return dense.as_strided(t.sizes(), {h * w, 1, w, 1});
}

}  // namespace

MnistCnn::MnistCnn() : Model(kName) {
  conv1_ = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 32, 3)));
  conv2_ = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3)));
  fc1_ = register_module("fc1", torch::nn::Linear(64 * 12 * 12, 128));
  fc2_ = register_module("fc2", torch::nn::Linear(128, 10));
  torch::NoGradGuard no_grad;
  for (auto* conv : {&conv1_, &conv2_}) {
    const torch::Tensor w = (*conv)->weight;
    (*conv)->weight.set_data(torch::empty_strided(w.sizes(), channels_last(w).strides(), w.options())
                                 .copy_(w));
  }
}

torch::Tensor MnistCnn::forward(const torch::Tensor& x) {
  // In-place relu is safe: conv, pool and linear backward need their inputs, not their outputs.
  auto h = conv1_->forward(channels_last(x)).relu_();
  h = torch::max_pool2d(conv2_->forward(h), 2).relu_();
  h = dropout_(h, kConvDropout, is_training());
  h = torch::flatten(h, 1);
  h = fc1_->forward(h).relu_();
  h = dropout_(h, kDenseDropout, is_training());
  return fc2_->forward(h);
}

}  // namespace tsum::workload
