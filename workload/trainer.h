// Training and evaluation loops for one model and one optimizer over in-memory data sets.
//
// The data set is already normalized (see dataset.h). Each epoch draws a fresh permutation from
// torch's default generator (seed it with torch::manual_seed for reproducible runs) and copies each
// batch into buffers allocated once. Gradients are reset to undefined (not zero-filled) before each
// step, which the optimizers treat as "no gradient yet".
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "common/result.h"
#include "workload/dataset.h"
#include "workload/model.h"

namespace tsum::workload {

struct EpochStats {
  double loss = 0.0;          // mean cross-entropy over the epoch's images
  double accuracy = 0.0;      // fraction of the epoch's images classified right (training mode)
  std::int64_t images = 0;
  double seconds = 0.0;
};

struct EvalStats {
  double loss = 0.0;          // mean cross-entropy over the evaluated images
  double accuracy = 0.0;
  std::int64_t images = 0;
  double seconds = 0.0;
};

class Trainer {
 public:
  // batch_size >= 1. The trainer shares the model and owns the optimizer.
  Trainer(std::shared_ptr<Model> model, std::unique_ptr<torch::optim::Optimizer> optimizer,
          std::int64_t batch_size);

  // One pass over `data` in training mode. internal on a libtorch failure; invalid_argument for an
  // empty data set.
  Result<EpochStats> train_epoch(const Dataset& data);

  // Loss and accuracy in eval mode under inference mode (no autograd), in batches of the training
  // batch size: oneDNN's primitives for that shape are already built, and small batches keep the
  // activations cache-sized (batches of 1000 measured 2x slower).
  Result<EvalStats> evaluate(const Dataset& data);

 private:
  void run_epoch(const Dataset& data, EpochStats& stats);

  std::shared_ptr<Model> model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::int64_t batch_size_;
  std::vector<torch::Tensor> params_;
  torch::Tensor batch_images_;  // [batch_size, C, H, W], reused by every full batch
  torch::Tensor batch_labels_;  // [batch_size]
};

}  // namespace tsum::workload
