#include "workload/trainer.h"

#include <algorithm>
#include <chrono>

namespace tsum::workload {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

torch::Tensor loss_of(LossKind kind, const torch::Tensor& logits, const torch::Tensor& labels,
                      at::Reduction::Reduction reduction) {
  if (kind == LossKind::cross_entropy) {
    return torch::cross_entropy_loss(logits, labels, {}, reduction);
  }
  return torch::binary_cross_entropy_with_logits(
      logits.squeeze(1), labels.to(logits.scalar_type()), {}, {}, reduction);
}

// The examples of a batch classified right, as a tensor on the logits' device.
torch::Tensor correct_tensor(LossKind kind, const torch::Tensor& logits, const torch::Tensor& labels) {
  const torch::Tensor predicted =
      kind == LossKind::cross_entropy ? logits.argmax(1) : logits.squeeze(1).gt(0);
  return predicted.eq(labels).sum();
}

std::int64_t correct_of(LossKind kind, const torch::Tensor& logits, const torch::Tensor& labels) {
  return correct_tensor(kind, logits, labels).item<std::int64_t>();
}

}  // namespace

Trainer::Trainer(std::shared_ptr<Model> model, std::unique_ptr<torch::optim::Optimizer> optimizer,
                 TrainerOptions options)
    : model_(std::move(model)),
      optimizer_(std::move(optimizer)),
      options_(options),
      loss_kind_(model_->loss_kind()),
      params_(model_->parameters()),
      scaler_(options.loss_scale) {
  options_.batch_size = std::max<std::int64_t>(options_.batch_size, 1);
  for (const auto& group : optimizer_->param_groups()) {
    base_lrs_.push_back(group.options().get_lr());
  }
}

Result<EpochStats> Trainer::train_epoch(const Dataset& data) {
  if (data.size() == 0) return make_error(Code::invalid_argument, "training set is empty");
  EpochStats stats;
  try {
    run_epoch(data, stats);
  } catch (const std::exception& e) {
    return make_error(Code::internal, std::string("training failed: ") + e.what());
  }
  return stats;
}

Result<double> Trainer::train_step(const torch::Tensor& x, const torch::Tensor& y) {
  try {
    model_->train();
    const StepOutput out = step(x, y);
    return out.loss.item<double>();
  } catch (const std::exception& e) {
    return make_error(Code::internal, std::string("training step failed: ") + e.what());
  }
}

Result<Trainer::BatchSums> Trainer::backward(const torch::Tensor& x, const torch::Tensor& y,
                                             double scale) {
  try {
    model_->train();
    for (auto& p : params_) p.mutable_grad() = torch::Tensor();
    const torch::Tensor logits = forward(options_.augment ? augment_(x) : x);
    const torch::Tensor loss = loss_of(loss_kind_, logits, y, at::Reduction::Mean);
    (loss * scale).backward();
    torch::NoGradGuard no_grad;
    const double mean = loss.item<double>();
    return BatchSums{mean * static_cast<double>(x.size(0)), correct_of(loss_kind_, logits, y)};
  } catch (const std::exception& e) {
    return make_error(Code::internal, std::string("training step failed: ") + e.what());
  }
}

Status Trainer::apply_gradients() {
  try {
    if (options_.decay > 0.0) apply_decay();
    optimizer_->step();
    ++steps_;
  } catch (const std::exception& e) {
    return make_error(Code::internal, std::string("optimizer step failed: ") + e.what());
  }
  return {};
}

void Trainer::apply_decay() {
  const double factor = 1.0 / (1.0 + options_.decay * static_cast<double>(steps_));
  auto& groups = optimizer_->param_groups();
  for (std::size_t i = 0; i < groups.size(); ++i) groups[i].options().set_lr(base_lrs_[i] * factor);
}

torch::Tensor Trainer::forward(const torch::Tensor& x) {
  AutocastScope autocast(options_.placement);
  return model_->forward(x).to(torch::kFloat);
}

Trainer::StepOutput Trainer::step(const torch::Tensor& x, const torch::Tensor& y) {
  for (auto& p : params_) p.mutable_grad() = torch::Tensor();
  const torch::Tensor logits = forward(options_.augment ? augment_(x) : x);
  const torch::Tensor loss = loss_of(loss_kind_, logits, y, at::Reduction::Mean);
  if (options_.placement.precision == Precision::fp16) {
    scaler_.scale(loss).backward();
    if (!scaler_.unscale_and_update(params_)) return {loss, logits};
  } else {
    loss.backward();
  }
  if (options_.decay > 0.0) apply_decay();
  optimizer_->step();
  ++steps_;
  return {loss, logits};
}

void Trainer::run_epoch(const Dataset& data, EpochStats& stats) {
  const auto start = std::chrono::steady_clock::now();
  const std::int64_t n = data.size();
  const std::int64_t batch = options_.batch_size;
  if (!batch_inputs_.defined()) {
    auto shape = data.inputs.sizes().vec();
    shape[0] = batch;
    batch_inputs_ = torch::empty(shape, data.inputs.options());
    batch_labels_ = torch::empty({batch}, data.labels.options());
  }
  model_->train();
  const torch::Tensor order =
      torch::randperm(n, torch::TensorOptions().dtype(torch::kInt64).device(data.inputs.device()));
  // The sums stay on the data's device until the epoch ends: reading them every step would make the CPU wait for
  // a GPU at every step instead of queueing the next one.
  torch::Tensor loss_sum = torch::zeros({}, data.inputs.options().dtype(torch::kFloat64));
  torch::Tensor correct = torch::zeros({}, data.inputs.options().dtype(torch::kInt64));
  for (std::int64_t begin = 0; begin < n; begin += batch) {
    const std::int64_t len = std::min(batch, n - begin);
    const torch::Tensor index = order.narrow(0, begin, len);
    const auto gather_start = std::chrono::steady_clock::now();
    torch::Tensor x;
    torch::Tensor y;
    if (len == batch) {
      x = torch::index_select_out(batch_inputs_, data.inputs, 0, index);
      y = torch::index_select_out(batch_labels_, data.labels, 0, index);
    } else {
      x = data.inputs.index_select(0, index);
      y = data.labels.index_select(0, index);
    }
    gather_seconds_ += seconds_since(gather_start);
    const StepOutput out = step(x, y);
    torch::NoGradGuard no_grad;
    loss_sum.add_(out.loss.detach(), static_cast<double>(len));
    correct.add_(correct_tensor(loss_kind_, out.logits, y));
  }
  stats.images = n;
  stats.loss = loss_sum.item<double>() / static_cast<double>(n);
  stats.accuracy = static_cast<double>(correct.item<std::int64_t>()) / static_cast<double>(n);
  stats.seconds = seconds_since(start);
}

Result<EvalStats> Trainer::evaluate(const Dataset& data) {
  if (data.size() == 0) return make_error(Code::invalid_argument, "test set is empty");
  EvalStats stats;
  try {
    const auto start = std::chrono::steady_clock::now();
    model_->eval();
    c10::InferenceMode inference;
    const std::int64_t n = data.size();
    torch::Tensor loss_sum = torch::zeros({}, data.inputs.options().dtype(torch::kFloat64));
    torch::Tensor correct = torch::zeros({}, data.inputs.options().dtype(torch::kInt64));
    for (std::int64_t begin = 0; begin < n; begin += options_.batch_size) {
      const std::int64_t len = std::min(options_.batch_size, n - begin);
      const torch::Tensor x = data.inputs.narrow(0, begin, len);
      const torch::Tensor y = data.labels.narrow(0, begin, len);
      const torch::Tensor logits = forward(x);
      loss_sum.add_(loss_of(loss_kind_, logits, y, at::Reduction::Sum));
      correct.add_(correct_tensor(loss_kind_, logits, y));
    }
    stats.images = n;
    stats.loss = loss_sum.item<double>() / static_cast<double>(n);
    stats.accuracy = static_cast<double>(correct.item<std::int64_t>()) / static_cast<double>(n);
    stats.seconds = seconds_since(start);
  } catch (const std::exception& e) {
    return make_error(Code::internal, std::string("evaluation failed: ") + e.what());
  }
  return stats;
}

}  // namespace tsum::workload
