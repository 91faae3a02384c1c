#include "workload/distributed/data_parallel.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "workload/distributed/flat_tensors.h"
#include "workload/distributed/grad_buckets.h"

namespace tsum::workload {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kGradTag = 1;   // worker -> rank 0: gradients
constexpr int kParamTag = 2;  // rank 0 -> worker: parameters

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Batch {
  torch::Tensor x;
  torch::Tensor y;
  std::int64_t size = 0;  // 0: this rank has no examples in this global batch
};

// What every loop shares: the ranks, the trainer, the data and the epochs' common order.
class Loop {
 public:
  Loop(DistGroup& group, Trainer& trainer, const Dataset& data, const DataParallelPlan& plan,
       EventWriter& events)
      : group(group),
        trainer(trainer),
        data(data),
        plan(plan),
        events(events),
        params(trainer.parameters()),
        order_gen_(at::make_generator<at::CPUGeneratorImpl>(plan.seed)) {}

  // The epoch's permutation of the training set: the same on every rank.
  torch::Tensor permutation() {
    return torch::randperm(data.size(), order_gen_, torch::TensorOptions().dtype(torch::kInt64));
  }
  torch::Tensor order_state() {
    std::lock_guard<std::mutex> lock(order_gen_.mutex());
    return order_gen_.get_state();
  }
  void set_order_state(const torch::Tensor& state) {
    std::lock_guard<std::mutex> lock(order_gen_.mutex());
    order_gen_.set_state(state);
  }

  Batch gather(const torch::Tensor& index) {
    const auto start = Clock::now();
    Batch b{data.inputs.index_select(0, index), data.labels.index_select(0, index), index.size(0)};
    stats.gather_seconds += seconds_since(start);
    return b;
  }

  // Backward on `b` (gradient of scale x mean loss), or no gradients at all for an empty share.
  Result<Trainer::BatchSums> backward(const Batch& b, double scale) {
    if (b.size == 0) {
      for (auto p : params) p.mutable_grad() = torch::Tensor();
      return Trainer::BatchSums{};
    }
    return trainer.backward(b.x, b.y, scale);
  }

  void emit_epoch(std::int64_t epoch, double loss_sum, double correct, double count,
                  double images, double seconds) {
    events.emit("epoch", {{"epoch", epoch},
                          {"epochs", plan.epochs},
                          {"loss", loss_sum / count},
                          {"train_accuracy", correct / count},
                          {"images_per_s", images / seconds},
                          {"seconds", seconds}});
  }

  DistGroup& group;
  Trainer& trainer;
  const Dataset& data;
  const DataParallelPlan& plan;
  EventWriter& events;
  const std::vector<torch::Tensor>& params;
  DataParallelStats stats;

 private:
  at::Generator order_gen_;
};

// One step of ring or ps (sync) on this rank's share `b` of a global batch.
class SyncStep {
 public:
  virtual ~SyncStep() = default;
  virtual Result<Trainer::BatchSums> run(const Batch& b, double scale) = 0;
};

class RingStep : public SyncStep {
 public:
  explicit RingStep(Loop& loop) : loop_(loop), buckets_(loop.group, loop.params) {}
  Result<Trainer::BatchSums> run(const Batch& b, double scale) override {
    buckets_.arm();
    auto sums = loop_.backward(b, scale);
    if (!sums.ok()) return sums.error();
    if (auto st = buckets_.finish(); !st.ok()) return st.error();
    if (auto st = loop_.trainer.apply_gradients(); !st.ok()) return st.error();
    ++loop_.stats.updates;
    return sums;
  }

 private:
  Loop& loop_;
  GradBuckets buckets_;
};

class PsSyncStep : public SyncStep {
 public:
  explicit PsSyncStep(Loop& loop) : loop_(loop) {
    const auto n = numel_of(loop.params);
    grads_ = torch::zeros({n});
    values_ = torch::zeros({n});
    if (loop.group.rank() == 0) {
      for (int w = 1; w < loop.group.size(); ++w) received_.push_back(torch::zeros({n}));
    }
  }

  Result<Trainer::BatchSums> run(const Batch& b, double scale) override {
    return loop_.group.rank() == 0 ? serve(b, scale) : work(b, scale);
  }

 private:
  // Rank 0: its own share's gradients plus every worker's, one optimizer step, parameters out.
  Result<Trainer::BatchSums> serve(const Batch& b, double scale) {
    DistGroup& g = loop_.group;
    std::vector<c10::intrusive_ptr<c10d::Work>> recvs;
    for (int w = 1; w < g.size(); ++w) recvs.push_back(g.start_recv(received_[w - 1], w, kGradTag));
    auto sums = loop_.backward(b, scale);
    if (!sums.ok()) return sums.error();
    flatten_grads(loop_.params, grads_);
    for (std::size_t i = 0; i < recvs.size(); ++i) {
      if (auto st = g.wait(recvs[i]); !st.ok()) return st.error();
      grads_.add_(received_[i]);
    }
    grads_from_flat(loop_.params, grads_);
    if (auto st = loop_.trainer.apply_gradients(); !st.ok()) return st.error();
    ++loop_.stats.updates;
    flatten_values(loop_.params, values_);
    std::vector<c10::intrusive_ptr<c10d::Work>> sends;
    for (int w = 1; w < g.size(); ++w) sends.push_back(g.start_send(values_, w, kParamTag));
    for (const auto& s : sends) {
      if (auto st = g.wait(s); !st.ok()) return st.error();
    }
    return sums;
  }

  // A worker: gradients to rank 0, the updated parameters back.
  Result<Trainer::BatchSums> work(const Batch& b, double scale) {
    DistGroup& g = loop_.group;
    auto params_in = g.start_recv(values_, 0, kParamTag);
    auto sums = loop_.backward(b, scale);
    if (!sums.ok()) return sums.error();
    flatten_grads(loop_.params, grads_);
    if (auto st = g.wait(g.start_send(grads_, 0, kGradTag)); !st.ok()) return st.error();
    if (auto st = g.wait(params_in); !st.ok()) return st.error();
    values_from_flat(loop_.params, values_);
    return sums;
  }

  Loop& loop_;
  torch::Tensor grads_;
  torch::Tensor values_;
  std::vector<torch::Tensor> received_;  // rank 0: one gradient buffer per worker
};

Status train_sync(Loop& loop) {
  const std::int64_t n = loop.data.size();
  const std::int64_t batch = loop.plan.batch;
  const std::int64_t rank = loop.group.rank();
  const std::int64_t ranks = loop.group.size();
  std::unique_ptr<SyncStep> step;
  if (loop.plan.mode == DistMode::ring) {
    step = std::make_unique<RingStep>(loop);
  } else {
    step = std::make_unique<PsSyncStep>(loop);
  }
  const DataParallelPlan& plan = loop.plan;
  const std::optional<DistProgress>& from = plan.resume;
  if (from && from->order_rng.defined()) loop.set_order_state(from->order_rng);
  auto last_checkpoint = Clock::now();
  double learned_before = from ? from->learn_seconds : 0.0;  // epochs done, every process
  for (std::int64_t epoch = from ? from->epoch : 1; epoch <= plan.epochs; ++epoch) {
    const bool resumed = from && epoch == from->epoch && from->order.defined();
    const auto start = Clock::now();
    const double seconds_before = resumed ? from->epoch_seconds : 0.0;
    const torch::Tensor order = resumed ? from->order : loop.permutation();
    const torch::Tensor order_rng = plan.save ? loop.order_state() : torch::Tensor();
    double sums[3] = {0.0, 0.0, 0.0};  // loss, correct, examples
    if (resumed) sums[0] = from->loss_sum, sums[1] = from->correct, sums[2] = from->examples;
    for (std::int64_t begin = resumed ? from->begin : 0; begin < n; begin += batch) {
      if (plan.save) {
        // Do the ranks checkpoint here? Any rank's stop, or rank 0's interval: one answer for all.
        const bool due = rank == 0 && plan.checkpoint_every_s > 0 &&
                         seconds_since(last_checkpoint) >= plan.checkpoint_every_s;
        torch::Tensor flags = torch::tensor({plan.stop && plan.stop() ? 1.0 : 0.0, due ? 1.0 : 0.0}, torch::kFloat64);
        if (auto st = loop.group.allreduce_sum(flags); !st.ok()) return st;
        const bool stopping = flags[0].item<double>() > 0;
        if (stopping || flags[1].item<double>() > 0) {
          DistProgress at{epoch, begin, sums[0], sums[1], sums[2], seconds_before + seconds_since(start),
                          learned_before, order, order_rng};
          if (auto st = plan.save(at, stopping); !st.ok()) return st;
          last_checkpoint = Clock::now();
          if (stopping) return make_error(Code::cancelled, "stopped at a checkpoint with every rank");
        }
      }
      const std::int64_t len = std::min(batch, n - begin);
      const std::int64_t lo = len * rank / ranks;
      const std::int64_t hi = len * (rank + 1) / ranks;
      Batch b;
      if (hi > lo) b = loop.gather(order.narrow(0, begin + lo, hi - lo));
      auto s = step->run(b, static_cast<double>(hi - lo) / static_cast<double>(len));
      if (!s.ok()) return s.error();
      sums[0] += s->loss_sum;
      sums[1] += static_cast<double>(s->correct);
      sums[2] += static_cast<double>(hi - lo);
    }
    torch::Tensor total = torch::tensor({sums[0], sums[1], sums[2]}, torch::kFloat64);
    if (auto st = loop.group.allreduce_sum(total); !st.ok()) return st;
    const double here = seconds_since(start);
    loop.stats.learn_seconds += here;
    learned_before += seconds_before + here;
    loop.emit_epoch(epoch, total[0].item<double>(), total[1].item<double>(),
                    total[2].item<double>(), static_cast<double>(n), seconds_before + here);
  }
  return {};
}

// ps async: worker k (rank k+1) of W = N-1 owns slice [n*k/W, n*(k+1)/W) of each permutation.
std::int64_t slice_begin(std::int64_t n, std::int64_t k, std::int64_t workers) {
  return n * k / workers;
}

// A gradient message: the gradients, then the parameter version they were computed on, the batch's
// loss sum, examples right and examples. A parameter message: the values, then their version.
constexpr std::int64_t kGradExtra = 4;
constexpr std::int64_t kParamExtra = 1;

Status serve_async(Loop& loop) {
  DistGroup& g = loop.group;
  const std::int64_t n = loop.data.size();
  const std::int64_t workers = g.size() - 1;
  const std::int64_t batch = loop.plan.batch;
  std::int64_t per_epoch = 0;
  for (std::int64_t k = 0; k < workers; ++k) {
    const std::int64_t len = slice_begin(n, k + 1, workers) - slice_begin(n, k, workers);
    per_epoch += (len + batch - 1) / batch;
  }
  const std::int64_t p = numel_of(loop.params);
  torch::Tensor message = torch::zeros({p + kGradExtra});
  std::vector<torch::Tensor> replies(static_cast<std::size_t>(g.size()));
  std::vector<c10::intrusive_ptr<c10d::Work>> sending(static_cast<std::size_t>(g.size()));
  std::int64_t version = 0;
  double staleness_sum = 0.0;
  for (std::int64_t epoch = 1; epoch <= loop.plan.epochs; ++epoch) {
    const auto start = Clock::now();
    double sums[3] = {0.0, 0.0, 0.0};
    for (std::int64_t m = 0; m < per_epoch; ++m) {
      auto work = g.start_recv_any(message, kGradTag);
      if (auto st = g.wait(work); !st.ok()) return st;
      const int src = DistGroup::source_rank(work);
      const auto tail = message.narrow(0, p, kGradExtra);
      const auto stale = version - static_cast<std::int64_t>(tail[0].item<float>());
      staleness_sum += static_cast<double>(stale);
      loop.stats.staleness_max = std::max(loop.stats.staleness_max, stale);
      for (int i = 0; i < 3; ++i) sums[i] += tail[i + 1].item<double>();
      grads_from_flat(loop.params, message.narrow(0, 0, p));
      if (auto st = loop.trainer.apply_gradients(); !st.ok()) return st;
      ++version;
      auto& reply = replies[static_cast<std::size_t>(src)];
      auto& previous = sending[static_cast<std::size_t>(src)];
      if (previous) {
        if (auto st = g.wait(previous); !st.ok()) return st;
      }
      if (!reply.defined()) reply = torch::zeros({p + kParamExtra});
      flatten_values(loop.params, reply);
      reply[p] = static_cast<float>(version);
      previous = g.start_send(reply, src, kParamTag);
    }
    const double seconds = seconds_since(start);
    loop.stats.learn_seconds += seconds;
    loop.emit_epoch(epoch, sums[0], sums[1], sums[2], static_cast<double>(n), seconds);
  }
  for (const auto& s : sending) {
    if (!s) continue;
    if (auto st = g.wait(s); !st.ok()) return st;
  }
  loop.stats.updates = version;
  loop.stats.staleness_mean = version > 0 ? staleness_sum / static_cast<double>(version) : 0.0;
  return {};
}

Status work_async(Loop& loop) {
  DistGroup& g = loop.group;
  const std::int64_t n = loop.data.size();
  const std::int64_t workers = g.size() - 1;
  const std::int64_t k = g.rank() - 1;
  const std::int64_t batch = loop.plan.batch;
  const std::int64_t p = numel_of(loop.params);
  torch::Tensor message = torch::zeros({p + kGradExtra});
  torch::Tensor reply = torch::zeros({p + kParamExtra});
  float version = 0.0F;
  for (std::int64_t epoch = 1; epoch <= loop.plan.epochs; ++epoch) {
    const auto start = Clock::now();
    const torch::Tensor order = loop.permutation();
    const std::int64_t lo = slice_begin(n, k, workers);
    const std::int64_t len = slice_begin(n, k + 1, workers) - lo;
    double sums[3] = {0.0, 0.0, 0.0};
    for (std::int64_t begin = 0; begin < len; begin += batch) {
      const Batch b = loop.gather(order.narrow(0, lo + begin, std::min(batch, len - begin)));
      auto s = loop.backward(b, 1.0);
      if (!s.ok()) return s.error();
      flatten_grads(loop.params, message);
      const double tail[4] = {version, s->loss_sum, static_cast<double>(s->correct),
                              static_cast<double>(b.size)};
      for (int i = 0; i < 4; ++i) message[p + i] = static_cast<float>(tail[i]);
      for (int i = 0; i < 3; ++i) sums[i] += tail[i + 1];
      auto params_in = g.start_recv(reply, 0, kParamTag);
      if (auto st = g.wait(g.start_send(message, 0, kGradTag)); !st.ok()) return st;
      if (auto st = g.wait(params_in); !st.ok()) return st;
      values_from_flat(loop.params, reply.narrow(0, 0, p));
      version = reply[p].item<float>();
    }
    const double seconds = seconds_since(start);
    loop.stats.learn_seconds += seconds;
    loop.emit_epoch(epoch, sums[0], sums[1], sums[2], sums[2], seconds);
  }
  return {};
}

}  // namespace

Result<DataParallelStats> train_data_parallel(DistGroup& group, Trainer& trainer,
                                              const Dataset& train, const DataParallelPlan& plan,
                                              EventWriter& events) {
  if (train.size() == 0) return make_error(Code::invalid_argument, "training set is empty");
  if (plan.save && plan.async)
    return make_error(Code::invalid_argument, "ps async keeps no step all ranks share: it cannot checkpoint");
  Loop loop(group, trainer, train, plan, events);
  try {
    if (auto st = group.broadcast(loop.params); !st.ok()) return st.error();
    Status st;
    if (plan.mode == DistMode::ps && plan.async) {
      st = group.rank() == 0 ? serve_async(loop) : work_async(loop);
    } else {
      st = train_sync(loop);
    }
    if (!st.ok()) return st.error();
  } catch (const std::exception& e) {
    return make_error(Code::internal, std::string("data-parallel training failed: ") + e.what());
  }
  loop.stats.images = train.size() * plan.epochs;
  loop.stats.comm_seconds = group.comm_seconds();
  loop.stats.bytes_sent = group.bytes_sent();
  torch::Tensor totals = torch::tensor(
      {loop.stats.comm_seconds, static_cast<double>(loop.stats.bytes_sent)}, torch::kFloat64);
  if (auto st = group.allreduce_sum(totals); !st.ok()) return st.error();
  loop.stats.comm_seconds_all = totals[0].item<double>();
  loop.stats.bytes_sent_all = static_cast<std::int64_t>(totals[1].item<double>());
  return loop.stats;
}

}  // namespace tsum::workload
