// Random image augmentation for training batches, after Keras's ImageDataGenerator as the
// cifar10_cnn example configures it (width_shift_range=0.1, height_shift_range=0.1,
// horizontal_flip=True, fill_mode='nearest'): each image is shifted by up to 10% of its width and
// height and mirrored left-right with probability 1/2; pixels shifted in repeat the nearest edge.
// Unlike Keras, shifts are whole pixels (uniform in [-round(0.1*side), +round(0.1*side)]), so no
// interpolation blurs the image. Draws come from torch's default generator (torch::manual_seed).
#pragma once

#include <torch/torch.h>

namespace tsum::workload {

class ImageAugment {
 public:
  explicit ImageAugment(double shift_fraction = 0.1, bool flip = true)
      : shift_fraction_(shift_fraction), flip_(flip) {}

  // A new batch [N, C, H, W] (same dtype and memory format) with every image transformed on its
  // own.
  torch::Tensor operator()(const torch::Tensor& images) const;

 private:
  double shift_fraction_;
  bool flip_;
};

}  // namespace tsum::workload
