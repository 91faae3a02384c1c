// Ring data parallelism's gradient exchange: the gradients of a model summed over the ranks with
// Gloo's all-reduce, in buckets of about kBucketBytes, overlapped with the backward pass.
//
// Each parameter carries a gradient hook (libtorch 1.13's Tensor::register_hook, which runs in the
// autograd engine as the parameter's gradient is produced, before it is accumulated). The hook
// copies the gradient into its bucket's flat buffer; when a bucket's last gradient arrives, the
// bucket's all-reduce starts in Gloo's thread while the backward pass goes on computing the earlier
// layers' gradients. Buckets hold the parameters in reverse model order (the order backward produces
// them) and start strictly in bucket order, so every rank issues the same collectives in the same
// order. finish() waits for them and points each parameter's grad at its summed slice; the caller
// scales each rank's loss so that the sum is the global batch's mean gradient.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "common/result.h"
#include "workload/distributed/distributed.h"

namespace tsum::workload {

class GradBuckets {
 public:
  static constexpr std::int64_t kBucketBytes = std::int64_t{2} << 20;

  // Registers the hooks (inactive until arm()); the group must outlive this object, which removes
  // its hooks when destroyed. Parameters are float32.
  GradBuckets(DistGroup& group, std::vector<torch::Tensor> params,
              std::int64_t bucket_bytes = kBucketBytes);
  ~GradBuckets();
  GradBuckets(const GradBuckets&) = delete;
  GradBuckets& operator=(const GradBuckets&) = delete;

  // Before a backward pass: every bucket empty, hooks active.
  void arm();

  // After the backward pass (or instead of one, on a rank with no examples in this batch): starts
  // the buckets whose gradients never came, with zeros there; waits for every bucket; sets each
  // parameter's grad to its slice of the sum. unavailable (naming the rank to blame) when an
  // all-reduce fails.
  Status finish();

  std::size_t bucket_count() const { return buckets_.size(); }

 private:
  struct Slot {
    std::size_t bucket = 0;
    std::int64_t offset = 0;
    bool filled = false;
  };
  struct Bucket {
    torch::Tensor flat;
    std::vector<std::size_t> params;
    std::size_t pending = 0;
    c10::intrusive_ptr<c10d::Work> work;
  };

  void on_grad(std::size_t param, const torch::Tensor& grad);
  void start_ready();

  DistGroup& group_;
  std::vector<torch::Tensor> params_;
  std::vector<unsigned> hooks_;
  std::vector<Slot> slots_;
  std::vector<Bucket> buckets_;
  std::size_t next_start_ = 0;
  bool armed_ = false;
};

}  // namespace tsum::workload
