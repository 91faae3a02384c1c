// A checkpoint of a training run that another process, on another machine, resumes from as if it had not
// stopped (tsum-train --resume): the model's parameters and buffers, the optimizer's state (every optimizer
// tsum-train has), the steps taken, fp16's loss scale, where the epoch stands (its permutation and the examples
// done, with their loss and accuracy so far), the learning seconds so far, torch's default CPU generator
// (the next epochs' permutations, augmentation) and the model's dropout streams. On the CPU with the same
// thread count a resumed run computes the same numbers as one that never stopped (tests/workload/test_resume.cpp);
// a GPU run's CUDA generator is not kept.
//
// The file is written whole or not at all (a temporary file, then a rename), so a machine that vanishes while
// writing leaves the previous checkpoint. Tensors are saved on the CPU, so a GPU run's checkpoint resumes
// anywhere.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "common/result.h"
#include "workload/train/trainer.h"

namespace tsum::workload {

struct TrainProgress {
  std::int64_t epoch = 1;        // the epoch in progress, 1-based
  Trainer::EpochCursor cursor;   // where it stands
  double learn_seconds = 0.0;    // learning done in the epochs before it, over every process of the run
  std::string model;             // the model's name, checked on resume
  // A data-parallel rank's (data_parallel.h): the shared order's generator after drawing this epoch's
  // permutation, and the examples of its shares so far in the epoch. Undefined / 0 for one process.
  torch::Tensor order_rng;
  double share_examples = 0.0;
};

// Writes the checkpoint to `path`; returns its size in bytes. unavailable when it cannot be written.
Result<std::int64_t> save_training_state(const std::string& path, Trainer& trainer, const TrainProgress& at);

// Reads `path` into `trainer` (made as the saved run's was) and returns where to go on; torch's default CPU
// generator is restored too. not_found for a missing file; invalid_argument for one that is not a checkpoint
// of this model and optimizer.
Result<TrainProgress> load_training_state(const std::string& path, Trainer& trainer, const std::string& model);

// The optimizer's per-parameter state (Adam's moments, SGD's momentum buffer, ...), by parameter index, and back.
// invalid_argument for an optimizer tsum-train does not make.
Status save_optimizer_state(torch::optim::Optimizer& optimizer, torch::serialize::OutputArchive& archive);
Status load_optimizer_state(torch::optim::Optimizer& optimizer, torch::serialize::InputArchive& archive);

}  // namespace tsum::workload
