// Dynamic loss scaling for fp16 mixed precision, as torch.cuda.amp.GradScaler does it.
//
// fp16 gradients of small losses underflow to zero, so the loss is multiplied by a large scale
// before backward and the gradients divided by it before the step. A step whose gradients hold an
// inf or NaN is skipped and the scale halved; after `growth_interval` clean steps in a row the scale
// doubles. The arithmetic is plain tensor ops, so it runs (and is tested) on any device.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace tsum::workload {

struct LossScalerOptions {
  double initial_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  std::int64_t growth_interval = 2000;
};

class LossScaler {
 public:
  explicit LossScaler(LossScalerOptions options = {}) : options_(options), scale_(options.initial_scale) {}

  // loss * scale, to call backward() on.
  torch::Tensor scale(const torch::Tensor& loss) const { return loss * scale_; }

  // Divides every defined gradient of `params` by the scale and updates the scale. True when the
  // gradients are finite and the optimizer may step; false when the step must be skipped.
  bool unscale_and_update(const std::vector<torch::Tensor>& params);

  double current_scale() const { return scale_; }
  std::int64_t skipped_steps() const { return skipped_; }
  std::int64_t clean_steps() const { return clean_steps_; }
  // Puts back what a checkpoint saved of the three above.
  void restore(double scale, std::int64_t clean_steps, std::int64_t skipped) {
    scale_ = scale;
    clean_steps_ = clean_steps;
    skipped_ = skipped;
  }

 private:
  LossScalerOptions options_;
  double scale_;
  std::int64_t clean_steps_ = 0;
  std::int64_t skipped_ = 0;
};

}  // namespace tsum::workload
