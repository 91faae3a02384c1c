#include "workload/trainer.h"

#include <algorithm>
#include <chrono>

namespace tsum::workload {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Trainer::Trainer(std::shared_ptr<Model> model, std::unique_ptr<torch::optim::Optimizer> optimizer,
                 std::int64_t batch_size)
    : model_(std::move(model)),
      optimizer_(std::move(optimizer)),
      batch_size_(std::max<std::int64_t>(batch_size, 1)),
      params_(model_->parameters()) {}

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

void Trainer::run_epoch(const Dataset& data, EpochStats& stats) {
  const auto start = std::chrono::steady_clock::now();
  const std::int64_t n = data.size();
  if (!batch_images_.defined()) {
    auto shape = data.images.sizes().vec();
    shape[0] = batch_size_;
    batch_images_ = torch::empty(shape, data.images.options());
    batch_labels_ = torch::empty({batch_size_}, data.labels.options());
  }
  model_->train();
  const torch::Tensor order = torch::randperm(n, torch::TensorOptions().dtype(torch::kInt64));
  double loss_sum = 0.0;
  std::int64_t correct = 0;
  for (std::int64_t begin = 0; begin < n; begin += batch_size_) {
    const std::int64_t len = std::min(batch_size_, n - begin);
    const torch::Tensor index = order.narrow(0, begin, len);
    torch::Tensor x;
    torch::Tensor y;
    if (len == batch_size_) {
      x = torch::index_select_out(batch_images_, data.images, 0, index);
      y = torch::index_select_out(batch_labels_, data.labels, 0, index);
    } else {
      x = data.images.index_select(0, index);
      y = data.labels.index_select(0, index);
    }
    for (auto& p : params_) p.mutable_grad() = torch::Tensor();
    const torch::Tensor logits = model_->forward(x);
    const torch::Tensor loss = torch::cross_entropy_loss(logits, y);
    loss.backward();
    optimizer_->step();
    torch::NoGradGuard no_grad;
    loss_sum += loss.item<double>() * static_cast<double>(len);
    correct += logits.argmax(1).eq(y).sum().item<std::int64_t>();
  }
  stats.images = n;
  stats.loss = loss_sum / static_cast<double>(n);
  stats.accuracy = static_cast<double>(correct) / static_cast<double>(n);
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
    double loss_sum = 0.0;
    std::int64_t correct = 0;
    for (std::int64_t begin = 0; begin < n; begin += batch_size_) {
      const std::int64_t len = std::min(batch_size_, n - begin);
      const torch::Tensor x = data.images.narrow(0, begin, len);
      const torch::Tensor y = data.labels.narrow(0, begin, len);
      const torch::Tensor logits = model_->forward(x);
      loss_sum += torch::cross_entropy_loss(logits, y, {}, at::Reduction::Sum).item<double>();
      correct += logits.argmax(1).eq(y).sum().item<std::int64_t>();
    }
    stats.images = n;
    stats.loss = loss_sum / static_cast<double>(n);
    stats.accuracy = static_cast<double>(correct) / static_cast<double>(n);
    stats.seconds = seconds_since(start);
  } catch (const std::exception& e) {
    return make_error(Code::internal, std::string("evaluation failed: ") + e.what());
  }
  return stats;
}

}  // namespace tsum::workload
