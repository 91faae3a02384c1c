#include "workload/models/resnet50.h"

namespace tsum::workload {
namespace {

torch::nn::Conv2d conv(std::int64_t in, std::int64_t out, std::int64_t kernel,
                       std::int64_t stride = 1) {
  return torch::nn::Conv2d(
      torch::nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2).bias(false));
}

}  // namespace

FoldedConv::FoldedConv(const torch::nn::Conv2d& conv, const torch::nn::BatchNorm2d& bn, std::int64_t s)
    : stride(s), padding(conv->weight.size(2) / 2) {
  torch::NoGradGuard no_grad;
  const auto scale = bn->weight / torch::sqrt(bn->running_var + bn->options.eps());
  weight = (conv->weight * scale.reshape({-1, 1, 1, 1})).contiguous(torch::MemoryFormat::ChannelsLast);
  bias = bn->bias - bn->running_mean * scale;
}

torch::Tensor FoldedConv::operator()(const torch::Tensor& x) const {
  return torch::conv2d(x, weight, bias, stride, padding);
}

BottleneckImpl::BottleneckImpl(std::int64_t in, std::int64_t width, std::int64_t stride) : stride_(stride) {
  const std::int64_t out = width * kExpansion;
  conv1_ = register_module("conv1", conv(in, width, 1));
  bn1_ = register_module("bn1", torch::nn::BatchNorm2d(width));
  conv2_ = register_module("conv2", conv(width, width, 3, stride));
  bn2_ = register_module("bn2", torch::nn::BatchNorm2d(width));
  conv3_ = register_module("conv3", conv(width, out, 1));
  bn3_ = register_module("bn3", torch::nn::BatchNorm2d(out));
  if (stride != 1 || in != out) {
    downsample_ = register_module(
        "downsample", torch::nn::Sequential(conv(in, out, 1, stride), torch::nn::BatchNorm2d(out)));
  }
}

void BottleneckImpl::fold() {
  std::optional<FoldedConv> down;
  if (downsample_) {
    const auto parts = downsample_->children();  // conv, batch norm
    down.emplace(torch::nn::Conv2d(std::dynamic_pointer_cast<torch::nn::Conv2dImpl>(parts.at(0))),
                 torch::nn::BatchNorm2d(std::dynamic_pointer_cast<torch::nn::BatchNorm2dImpl>(parts.at(1))), stride_);
  }
  folded_ = Folded{{conv1_, bn1_, 1}, {conv2_, bn2_, stride_}, {conv3_, bn3_, 1}, std::move(down)};
}

torch::Tensor BottleneckImpl::forward(const torch::Tensor& x) {
  if (folded_) {
    const auto& f = *folded_;
    auto h = f.c1(x).relu_();
    h = f.c2(h).relu_();
    h = f.c3(h);
    return h.add_(f.down ? (*f.down)(x) : x).relu_();
  }
  // In-place relu is safe: batch-norm and conv backward need their inputs, not their outputs.
  auto h = bn1_->forward(conv1_->forward(x)).relu_();
  h = bn2_->forward(conv2_->forward(h)).relu_();
  h = bn3_->forward(conv3_->forward(h));
  const torch::Tensor identity = downsample_ ? downsample_->forward(x) : x;
  return h.add_(identity).relu_();
}

ResNet50::ResNet50(std::int64_t classes, std::int64_t image_size)
    : Model(kName), classes_(classes), image_size_(image_size) {
  conv1_ = register_module(
      "conv1",
      torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 64, 7).stride(2).padding(3).bias(false)));
  bn1_ = register_module("bn1", torch::nn::BatchNorm2d(64));
  std::int64_t in = 64;
  layer1_ = register_module("layer1", make_stage(in, 64, 3, 1));
  layer2_ = register_module("layer2", make_stage(in, 128, 4, 2));
  layer3_ = register_module("layer3", make_stage(in, 256, 6, 2));
  layer4_ = register_module("layer4", make_stage(in, 512, 3, 2));
  fc_ = register_module("fc", torch::nn::Linear(in, classes));

  torch::NoGradGuard no_grad;
  for (auto& module : modules(/*include_self=*/false)) {
    if (auto* c = module->as<torch::nn::Conv2d>()) {
      torch::nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kReLU);
    }
  }
  make_channels_last(*this);
}

torch::nn::Sequential ResNet50::make_stage(std::int64_t& in, std::int64_t width,
                                           std::int64_t blocks, std::int64_t stride) {
  torch::nn::Sequential stage;
  for (std::int64_t i = 0; i < blocks; ++i) {
    stage->push_back(Bottleneck(in, width, i == 0 ? stride : 1));
    in = width * BottleneckImpl::kExpansion;
  }
  return stage;
}

void ResNet50::fold_for_inference() {
  stem_.emplace(conv1_, bn1_, 2);
  for (auto* stage : {&layer1_, &layer2_, &layer3_, &layer4_})
    for (const auto& block : (*stage)->children()) block->as<BottleneckImpl>()->fold();
}

torch::Tensor ResNet50::forward(const torch::Tensor& x) {
  const auto in = x.contiguous(torch::MemoryFormat::ChannelsLast);
  auto h = (stem_ ? (*stem_)(in) : bn1_->forward(conv1_->forward(in))).relu_();
  h = torch::max_pool2d(h, 3, 2, 1);
  for (auto* stage : {&layer1_, &layer2_, &layer3_, &layer4_}) h = (*stage)->forward(h);
  h = torch::adaptive_avg_pool2d(h, {1, 1}).flatten(1);
  return fc_->forward(h);
}

}  // namespace tsum::workload
