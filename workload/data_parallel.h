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

#include "common/result.h"
#include "workload/dataset.h"
#include "workload/distributed.h"
#include "workload/event_writer.h"
#include "workload/options.h"
#include "workload/trainer.h"

namespace tsum::workload {

struct DataParallelPlan {
  DistMode mode = DistMode::ring;
  bool async = false;
  std::int64_t epochs = 1;
  std::int64_t batch = 1;  // the global batch
  std::uint64_t seed = 1;
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
