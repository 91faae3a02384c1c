// The room workload/distributed/ owns data-parallel training: the ranks joined over c10d, the gradient exchange and
// its buckets, and the ranks' liveness. It calls train/ (the loops' options) and data/.
//
// The ranks of a data-parallel tsum-train run, joined over PyTorch's c10d (libtorch 1.13): rank 0
// hosts a TCPStore at --master; every rank connects to it, starts a RankWatchdog (heartbeats in the
// store) and builds a ProcessGroupGloo (TCP, one Gloo thread) on the address it reaches the master
// from. No collective code of our own: all-reduce, broadcast and send/recv are Gloo's.
//
// Every operation is accounted: comm_seconds is the wall time this rank spent waiting for
// communication to finish (not the part overlapped with computation), bytes_sent what it put on the
// wire: point-to-point messages exactly, a ring all-reduce of B bytes as 2(N-1)/N x B (what Gloo's
// ring algorithm sends per rank), a broadcast as B for each receiver on rank 0.
//
// A failed operation (a peer exited, or stayed silent past the timeout) comes back as unavailable
// naming the rank to blame (RankWatchdog::diagnose); abort() then ends this process and, through the
// store's verdict, every other rank.
#pragma once

#include <torch/version.h>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "workload/train/options.h"

namespace tsum::workload {

class RankWatchdog;

class DistGroup {
 public:
  // Joins the run: unavailable when the store cannot be reached or listened on, or when a rank does
  // not join within the timeout (the detail names the ranks missing).
  static Result<std::unique_ptr<DistGroup>> join(const DistOptions& options);
  ~DistGroup();
  DistGroup(const DistGroup&) = delete;
  DistGroup& operator=(const DistGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Rank 0's values of `tensors` (contiguous, float32, the same shapes on every rank) on every rank.
  Status broadcast(const std::vector<torch::Tensor>& tensors);

  // In-place sum over the ranks, blocking.
  Status allreduce_sum(torch::Tensor& tensor);

  // Asynchronous operations; finish each with wait(), in the order they were started per kind.
  c10::intrusive_ptr<c10d::Work> start_allreduce(torch::Tensor& tensor);
  c10::intrusive_ptr<c10d::Work> start_send(torch::Tensor& tensor, int dst, int tag);
  c10::intrusive_ptr<c10d::Work> start_recv(torch::Tensor& tensor, int src, int tag);
  c10::intrusive_ptr<c10d::Work> start_recv_any(torch::Tensor& tensor, int tag);

  // Waits for `work`, counting the time as communication. unavailable naming the rank to blame.
  Status wait(const c10::intrusive_ptr<c10d::Work>& work);

  // The rank a finished start_recv_any received from.
  static int source_rank(const c10::intrusive_ptr<c10d::Work>& work);

  double comm_seconds() const { return comm_seconds_; }
  std::int64_t bytes_sent() const { return bytes_sent_; }

  // A clean end: marks this rank done; rank 0 waits (up to the timeout) for the others' marks.
  void finish();

  // Ends every rank: `error` becomes the run's verdict (prefixed with this rank when it did not
  // come from an operation of this group), is printed, and the process exits 1.
  [[noreturn]] void abort(const Error& error);

 private:
  DistGroup() = default;
  Status failed(const std::exception& e);

  int rank_ = 0;
  int size_ = 1;
  double comm_seconds_ = 0.0;
  std::int64_t bytes_sent_ = 0;
  bool diagnosed_ = false;  // the last error came from this group and names its culprit
  c10::intrusive_ptr<c10d::Store> store_;
  // Gloo's process group: a ProcessGroup in libtorch 1, a Backend (behind the ProcessGroup front) in libtorch 2.
#if TORCH_VERSION_MAJOR >= 2
  c10::intrusive_ptr<c10d::Backend> group_;
#else
  c10::intrusive_ptr<c10d::ProcessGroup> group_;
#endif
  std::unique_ptr<RankWatchdog> watchdog_;
};

}  // namespace tsum::workload
