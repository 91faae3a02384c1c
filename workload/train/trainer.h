// Training and evaluation loops for one model and one optimizer over in-memory data sets.
//
// The data set is already normalized (see dataset.h). Each epoch draws a fresh permutation from
// torch's default generator (seed it with torch::manual_seed for reproducible runs) and copies each
// batch into buffers allocated once. Gradients are reset to undefined (not zero-filled) before each
// step, which the optimizers treat as "no gradient yet". The loss is the model's LossKind: softmax
// cross-entropy, or sigmoid binary cross-entropy on a single logit (accuracy: logit > 0 means 1).
// The model and data must already be on the placement's device; forward passes run under autocast
// for bf16/fp16 and the loss is taken in float32.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "common/result.h"
#include "workload/data/augment.h"
#include "workload/data/dataset.h"
#include "workload/train/device.h"
#include "workload/optim/loss_scaler.h"
#include "workload/models/model.h"

namespace tsum::workload {

struct TrainerOptions {
  std::int64_t batch_size = 128;  // >= 1
  // Keras-style learning-rate decay: step t (0-based, counted over the trainer's life) runs with
  // lr / (1 + decay * t). 0 keeps the optimizer's learning rate.
  double decay = 0.0;
  bool augment = false;  // ImageAugment on every training batch; image models only
  // Where the model and data live, and the autocast precision of forward passes (device.h). fp16
  // adds dynamic loss scaling (loss_scaler.h).
  Placement placement = {};
  LossScalerOptions loss_scale = {};  // fp16 only
};

struct EpochStats {
  double loss = 0.0;        // mean loss over the epoch's examples
  double accuracy = 0.0;    // fraction of the epoch's examples classified right (training mode)
  std::int64_t images = 0;  // examples seen (images, or token sequences)
  double seconds = 0.0;
};

struct EvalStats {
  double loss = 0.0;          // mean loss over the evaluated examples
  double accuracy = 0.0;
  std::int64_t images = 0;
  double seconds = 0.0;
};

class Trainer {
 public:
  // The trainer shares the model and owns the optimizer.
  Trainer(std::shared_ptr<Model> model, std::unique_ptr<torch::optim::Optimizer> optimizer,
          TrainerOptions options);

  // One pass over `data` in training mode. internal on a libtorch failure; invalid_argument for an
  // empty data set.
  Result<EpochStats> train_epoch(const Dataset& data);

  // Where an epoch stands, so that it can stop between two steps and go on later, in this process or
  // in another one that loaded a checkpoint (train_state.h).
  struct EpochCursor {
    torch::Tensor order;       // the epoch's permutation, on the data's device; undefined: not drawn yet
    std::int64_t begin = 0;    // examples done
    double loss_sum = 0.0;     // their summed loss
    std::int64_t correct = 0;  // and how many were classified right
    double seconds = 0.0;      // spent on them
  };
  // Runs the epoch on from `cursor` (a fresh one: from its start, drawing its permutation). Before each step
  // it asks `pause` (may be empty): when that says so, it stops there and returns false, the cursor at that
  // batch; true once the epoch is complete. Errors as train_epoch's.
  Result<bool> train_epoch_from(const Dataset& data, EpochCursor& cursor, const std::function<bool()>& pause);
  // A complete epoch's statistics, from its cursor.
  static EpochStats epoch_stats(const EpochCursor& cursor);

  // The trainer's own part of a checkpoint: the model's parameters and buffers, the optimizer's state, the
  // steps taken and fp16's loss scale. load_state puts them back into a trainer made the same way (same
  // model, optimizer and options); invalid_argument when the archive does not fit it (another model, say).
  Status save_state(torch::serialize::OutputArchive& archive);
  Status load_state(torch::serialize::InputArchive& archive);

  // One optimizer step on the batch (inputs `x`, labels `y`) in training mode, augmented and
  // decayed like an epoch's steps; returns the batch's mean loss before the step. internal on a
  // libtorch failure (a shape mismatch, say).
  Result<double> train_step(const torch::Tensor& x, const torch::Tensor& y);

  // The pieces of a step, for data-parallel training (data_parallel.h), which exchanges gradients
  // or parameters between them. A batch's sums: its loss summed over examples and its examples
  // classified right.
  struct BatchSums {
    double loss_sum = 0.0;
    std::int64_t correct = 0;
  };

  // Forward and backward in training mode (augmented like train_step): leaves in each parameter's
  // grad the gradient of `scale` x the batch's mean loss. No optimizer step. fp32 and bf16 only
  // (fp16's loss scaling is per process). internal on a libtorch failure.
  Result<BatchSums> backward(const torch::Tensor& x, const torch::Tensor& y, double scale);

  // One optimizer step with the gradients now in the parameters, decayed like train_epoch's steps.
  // internal on a libtorch failure.
  Status apply_gradients();

  // The model's parameters, in model order.
  const std::vector<torch::Tensor>& parameters() const { return params_; }

  // Loss and accuracy in eval mode under inference mode (no autograd), in batches of the training
  // batch size: oneDNN's primitives for that shape are already built, and small batches keep the
  // activations cache-sized (batches of 1000 measured 2x slower).
  Result<EvalStats> evaluate(const Dataset& data);

  // Optimizer steps taken so far (fp16 steps skipped for non-finite gradients do not count).
  std::int64_t steps() const { return steps_; }

  // fp16's dynamic loss scale and the steps it skipped.
  const LossScaler& loss_scaler() const { return scaler_; }

  // Seconds spent gathering shuffled batches (index_select) in train_epoch, over the trainer's
  // life: the data-loading share of learn time.
  double batch_gather_seconds() const { return gather_seconds_; }

 private:
  struct StepOutput {
    torch::Tensor loss;  // mean over the batch
    torch::Tensor logits;
  };

  // Steps from cursor.begin while pause() says no; true once the epoch is complete.
  bool run_epoch(const Dataset& data, EpochCursor& cursor, const std::function<bool()>& pause);
  StepOutput step(const torch::Tensor& x, const torch::Tensor& y);
  torch::Tensor forward(const torch::Tensor& x);
  void apply_decay();

  std::shared_ptr<Model> model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  TrainerOptions options_;
  LossKind loss_kind_;
  ImageAugment augment_;
  std::vector<torch::Tensor> params_;
  std::vector<double> base_lrs_;  // each param group's learning rate before decay
  std::int64_t steps_ = 0;
  double gather_seconds_ = 0.0;
  LossScaler scaler_;
  torch::Tensor batch_inputs_;  // [batch_size, ...], reused by every full batch
  torch::Tensor batch_labels_;  // [batch_size]
};

}  // namespace tsum::workload
