#include "workload/data/augment.h"

#include <cmath>

namespace tsum::workload {
namespace {

// [N, side]: for each image, the source coordinate of each destination coordinate after a shift
// by up to `max_shift` pixels (edges repeated), optionally mirrored.
torch::Tensor source_coords(std::int64_t n, std::int64_t side, std::int64_t max_shift,
                            const torch::Tensor& mirrored, const torch::Device& device) {
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(device);
  const torch::Tensor shift = torch::randint(-max_shift, max_shift + 1, {n, 1}, i64);
  torch::Tensor coords = torch::arange(side, i64).unsqueeze(0).expand({n, side});
  if (mirrored.defined()) coords = torch::where(mirrored.unsqueeze(1), side - 1 - coords, coords);
  return (coords - shift).clamp_(0, side - 1);
}

}  // namespace

torch::Tensor ImageAugment::operator()(const torch::Tensor& images) const {
  const std::int64_t n = images.size(0);
  const std::int64_t c = images.size(1);
  const std::int64_t h = images.size(2);
  const std::int64_t w = images.size(3);
  const auto max_dy =
      static_cast<std::int64_t>(std::lround(shift_fraction_ * static_cast<double>(h)));
  const auto max_dx =
      static_cast<std::int64_t>(std::lround(shift_fraction_ * static_cast<double>(w)));
  // The shifts and flips are drawn where the images are (a GPU's own generator there).
  const torch::Device device = images.device();
  const torch::Tensor mirrored =
      flip_ ? torch::randint(0, 2, {n}, torch::TensorOptions().dtype(torch::kInt64).device(device)).eq(1)
            : torch::Tensor();
  const torch::Tensor rows = source_coords(n, h, max_dy, torch::Tensor(), device);
  const torch::Tensor cols = source_coords(n, w, max_dx, mirrored, device);
  // Flat source index of every destination pixel, shared by the channels: [N, 1, H*W].
  const torch::Tensor index = (rows.unsqueeze(2) * w + cols.unsqueeze(1)).view({n, 1, h * w});
  const torch::Tensor flat = images.contiguous().view({n, c, h * w});
  return flat.gather(2, index.expand({n, c, h * w}))
      .view({n, c, h, w})
      .contiguous(images.suggest_memory_format());
}

}  // namespace tsum::workload
