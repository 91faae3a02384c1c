#include "workload/distributed/grad_buckets.h"

namespace tsum::workload {

GradBuckets::GradBuckets(DistGroup& group, std::vector<torch::Tensor> params,
                         std::int64_t bucket_bytes)
    : group_(group), params_(std::move(params)), slots_(params_.size()) {
  std::int64_t bucket_size = 0;
  for (std::size_t k = params_.size(); k-- > 0;) {
    const std::int64_t bytes = params_[k].numel() * params_[k].element_size();
    if (buckets_.empty() || (bucket_size > 0 && bucket_size + bytes > bucket_bytes)) {
      buckets_.emplace_back();
      bucket_size = 0;
    }
    slots_[k] = {buckets_.size() - 1, bucket_size / params_[k].element_size(), false};
    buckets_.back().params.push_back(k);
    bucket_size += bytes;
  }
  for (auto& b : buckets_) {
    std::int64_t numel = 0;
    for (const std::size_t k : b.params) numel += params_[k].numel();
    b.flat = torch::zeros({numel}, params_[b.params.front()].options().requires_grad(false));
  }
  for (std::size_t k = 0; k < params_.size(); ++k) {
    hooks_.push_back(params_[k].register_hook([this, k](const torch::Tensor& g) { on_grad(k, g); }));
  }
}

GradBuckets::~GradBuckets() {
  for (std::size_t k = 0; k < params_.size(); ++k) params_[k].remove_hook(hooks_[k]);
}

void GradBuckets::arm() {
  for (auto& s : slots_) s.filled = false;
  for (auto& b : buckets_) {
    b.pending = b.params.size();
    b.work.reset();
  }
  next_start_ = 0;
  armed_ = true;
}

void GradBuckets::on_grad(std::size_t param, const torch::Tensor& grad) {
  if (!armed_) return;
  Slot& slot = slots_[param];
  Bucket& bucket = buckets_[slot.bucket];
  bucket.flat.narrow(0, slot.offset, grad.numel()).copy_(grad.reshape(-1));
  if (!slot.filled) {
    slot.filled = true;
    if (--bucket.pending == 0) start_ready();
  }
}

void GradBuckets::start_ready() {
  while (next_start_ < buckets_.size() && buckets_[next_start_].pending == 0) {
    Bucket& b = buckets_[next_start_++];
    b.work = group_.start_allreduce(b.flat);
  }
}

Status GradBuckets::finish() {
  try {
    torch::NoGradGuard no_grad;
    for (auto& b : buckets_) {
      if (b.pending == 0) continue;
      for (const std::size_t k : b.params) {
        if (!slots_[k].filled) b.flat.narrow(0, slots_[k].offset, params_[k].numel()).zero_();
      }
      b.pending = 0;
    }
    start_ready();
  } catch (const std::exception& e) {
    armed_ = false;
    return make_error(Code::internal, std::string("starting an all-reduce failed: ") + e.what());
  }
  armed_ = false;
  for (auto& b : buckets_) {
    if (auto st = group_.wait(b.work); !st.ok()) return st;
  }
  for (std::size_t k = 0; k < params_.size(); ++k) {
    const Slot& s = slots_[k];
    params_[k].mutable_grad() =
        buckets_[s.bucket].flat.narrow(0, s.offset, params_[k].numel()).view_as(params_[k]);
  }
  return {};
}

}  // namespace tsum::workload
