// ResNet-50 v1.5 (He et al. 2016, with the stride-2 downsampling on the 3x3 convolution of each
// bottleneck, as torchvision's resnet50): conv 7x7/2 64 -> BN -> relu -> maxpool 3x3/2 -> four
// stages of [3, 4, 6, 3] bottlenecks of width 64, 128, 256, 512 (x4 expansion) -> global average
// pool -> Dense `classes`. 25,557,032 parameters for 1000 classes. Module names follow torchvision
// (conv1, bn1, layer1.0.conv1, ..., fc) and so does initialization: Kaiming-normal (fan_out) convs,
// batch-norm scale 1 and shift 0. Activations and conv weights are channels-last.
// Input: 3 x image_size x image_size (224 by default; any size >= 32 works thanks to the global
// pool).
#pragma once

#include <optional>

#include "workload/models/model.h"

namespace tsum::workload {

// A convolution with the eval-mode batch norm after it folded in: weight x scale, bias shift - mean x scale, where
// scale = gamma / sqrt(var + eps) (Model::fold_for_inference).
struct FoldedConv {
  torch::Tensor weight, bias;
  std::int64_t stride = 1, padding = 0;
  FoldedConv(const torch::nn::Conv2d& conv, const torch::nn::BatchNorm2d& bn, std::int64_t stride);
  torch::Tensor operator()(const torch::Tensor& x) const;
};

class BottleneckImpl : public torch::nn::Module {
 public:
  static constexpr std::int64_t kExpansion = 4;

  // A block reading `in` channels and writing width * kExpansion, downsampling by `stride`.
  BottleneckImpl(std::int64_t in, std::int64_t width, std::int64_t stride);
  torch::Tensor forward(const torch::Tensor& x);
  void fold();

 private:
  std::int64_t stride_;
  struct Folded {
    FoldedConv c1, c2, c3;
    std::optional<FoldedConv> down;
  };
  std::optional<Folded> folded_;
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr};
  torch::nn::Conv2d conv2_{nullptr};
  torch::nn::BatchNorm2d bn2_{nullptr};
  torch::nn::Conv2d conv3_{nullptr};
  torch::nn::BatchNorm2d bn3_{nullptr};
  torch::nn::Sequential downsample_{nullptr};  // null when the shapes already match
};
TORCH_MODULE(Bottleneck);

class ResNet50 : public Model {
 public:
  static constexpr const char* kName = "resnet50";
  static constexpr std::int64_t kDefaultClasses = 1000;
  static constexpr std::int64_t kDefaultImageSize = 224;
  static constexpr std::int64_t kMinImageSize = 32;

  explicit ResNet50(std::int64_t classes = kDefaultClasses,
                    std::int64_t image_size = kDefaultImageSize);
  torch::Tensor forward(const torch::Tensor& x) override;
  void fold_for_inference() override;
  InputShape input_shape() const override {
    return {InputKind::image, 3, image_size_, image_size_, 0, 0, classes_};
  }

 private:
  torch::nn::Sequential make_stage(std::int64_t& in, std::int64_t width, std::int64_t blocks,
                                   std::int64_t stride);

  std::int64_t classes_;
  std::int64_t image_size_;
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr};
  torch::nn::Sequential layer1_{nullptr};
  torch::nn::Sequential layer2_{nullptr};
  torch::nn::Sequential layer3_{nullptr};
  torch::nn::Sequential layer4_{nullptr};
  torch::nn::Linear fc_{nullptr};
  std::optional<FoldedConv> stem_;  // conv1 with bn1, once folded
};

}  // namespace tsum::workload
