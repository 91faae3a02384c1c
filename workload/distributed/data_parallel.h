// The training loops of a data-parallel run (--world-size > 1), over a DistGroup.
//
// Every rank holds the whole training set and draws the same permutation each epoch (a generator of
// its own seeded with --seed, so dropout and augmentation, which use torch's default generator,
// differ per rank without moving the shared order). Rank 0's initial parameters are broadcast
// first, so every rank starts from the same model.
//   ring      each global batch of --batch examples is cut into N contiguous shares; each rank
//             takes the backward pass of its share with its loss scaled by share/batch, the
//             gradients are summed with bucketed all-reduces overlapped with backward
//             (grad_buckets.h), and every rank applies the same optimizer step.
//   ps        (sync) the same shares; rank 0 computes its share too, receives the others'
//             gradients, sums them, applies the optimizer step (its state lives only there) and
//             sends the parameters back. Workers keep no optimizer state.
//   ps async  rank 0 only serves: it applies each worker's gradient as it arrives (stale by the
//             updates applied since that worker got its parameters) and answers with the current
//             parameters. Workers 1..N-1 split each epoch's permutation into N-1 slices and step
//             through theirs in batches of the full --batch, so an epoch is as many updates of
//             the same size as with one rank; only their freshness differs.
// So the mathematics of ring and ps (sync) is that of one rank with the same global batch. Epoch
// events carry the run's loss and accuracy (summed over the ranks; ps async: rank 0's counts come
// with the gradients, a worker's are its own).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "common/result.h"
#include "workload/data/dataset.h"
#include "workload/distributed/distributed.h"
#include "workload/train/event_writer.h"
#include "workload/train/options.h"
#include "workload/train/trainer.h"

namespace tsum::workload {

// Where a data-parallel rank stands between two global steps (ring and ps sync): what its checkpoint keeps and a
// resumed rank goes on from. Every rank stands at the same step; the shares' sums are this rank's.
struct DistProgress {
  std::int64_t epoch = 1;
  std::int64_t begin = 0;           // examples of the epoch's permutation done
  double loss_sum = 0.0, correct = 0.0, examples = 0.0;  // this rank's shares of the epoch so far
  double epoch_seconds = 0.0;       // learning in the epoch so far (every process of the run)
  double learn_seconds = 0.0;       // learning in the epochs before it (every process of the run)
  torch::Tensor order;              // the epoch's permutation
  torch::Tensor order_rng;          // the shared order's generator, after drawing it
};

struct DataParallelPlan {
  DistMode mode = DistMode::ring;
  bool async = false;
  std::int64_t epochs = 1;
  std::int64_t batch = 1;  // the global batch
  std::uint64_t seed = 1;
  // Checkpoints (ring and ps sync; set save to have them): before each global step the ranks agree, with one
  // all-reduce of two numbers, whether any was told to stop (stop()) or rank 0's checkpoint_every_s has passed
  // since the last checkpoint. Then every rank calls save at that same step; after a stop they all return
  // cancelled. So a notice to any one machine checkpoints every rank at one step.
  std::function<bool()> stop = {};
  double checkpoint_every_s = 0.0;
  std::function<Status(const DistProgress&, bool stopping)> save = {};
  std::optional<DistProgress> resume = {};  // go on from here (each rank from its own checkpoint)
};

struct DataParallelStats {
  double learn_seconds = 0.0;     // this rank's, over the epochs
  std::int64_t images = 0;        // examples the run learned from (all ranks, all epochs)
  double gather_seconds = 0.0;    // this rank's batch gathering
  double comm_seconds = 0.0;      // this rank's waits for communication (distributed.h)
  std::int64_t bytes_sent = 0;    // this rank's
  double comm_seconds_all = 0.0;  // summed over the ranks
  std::int64_t bytes_sent_all = 0;
  std::int64_t updates = 0;       // optimizer steps this rank applied
  double staleness_mean = 0.0;    // ps async, rank 0: updates applied between a worker's
  std::int64_t staleness_max = 0;  // parameters and its gradient
};

// Trains `plan.epochs` epochs of `train` on this rank, emitting an "epoch" event per epoch.
// unavailable naming a rank when another rank fails; internal on a libtorch failure.
Result<DataParallelStats> train_data_parallel(DistGroup& group, Trainer& trainer,
                                              const Dataset& train, const DataParallelPlan& plan,
                                              EventWriter& events);

}  // namespace tsum::workload
