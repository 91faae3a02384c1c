#include "workload/train/trainer.h"

#include "workload/train/train_state.h"

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
  EpochCursor cursor;
  auto done = train_epoch_from(data, cursor, {});
  if (!done.ok()) return done.error();
  return epoch_stats(cursor);
}

Result<bool> Trainer::train_epoch_from(const Dataset& data, EpochCursor& cursor,
                                       const std::function<bool()>& pause) {
  if (data.size() == 0) return make_error(Code::invalid_argument, "training set is empty");
  if (cursor.order.defined() && cursor.order.numel() != data.size()) {
    return make_error(Code::invalid_argument,
                      "the epoch was begun on " + std::to_string(cursor.order.numel()) +
                          " training examples, this data set has " + std::to_string(data.size()));
  }
  try {
    if (cursor.order.defined() && cursor.order.device() != data.inputs.device()) {
      cursor.order = cursor.order.to(data.inputs.device());  // from a checkpoint, which keeps it on the CPU
    }
    return run_epoch(data, cursor, pause);
  } catch (const std::exception& e) {
    return make_error(Code::internal, std::string("training failed: ") + e.what());
  }
}

EpochStats Trainer::epoch_stats(const EpochCursor& cursor) {
  EpochStats stats;
  stats.images = cursor.begin;
  const double n = static_cast<double>(std::max<std::int64_t>(cursor.begin, 1));
  stats.loss = cursor.loss_sum / n;
  stats.accuracy = static_cast<double>(cursor.correct) / n;
  stats.seconds = cursor.seconds;
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

// Parameters and buffers go by their index in the model's order (a model made the same way has the same order),
// saved on the CPU.
Status Trainer::save_state(torch::serialize::OutputArchive& archive) {
  try {
    torch::NoGradGuard no_grad;
    torch::serialize::OutputArchive model(archive.compilation_unit());
    const auto params = model_->parameters();
    const auto buffers = model_->buffers();
    for (std::size_t i = 0; i < params.size(); ++i) {
      model.write("param_" + std::to_string(i), params[i].detach().to(torch::kCPU).contiguous(), true);
    }
    for (std::size_t i = 0; i < buffers.size(); ++i) {
      model.write("buffer_" + std::to_string(i), buffers[i].to(torch::kCPU).contiguous(), true);
    }
    model.write("params", c10::IValue(static_cast<std::int64_t>(params.size())));
    model.write("buffers", c10::IValue(static_cast<std::int64_t>(buffers.size())));
    archive.write("model", model);
    torch::serialize::OutputArchive optimizer(archive.compilation_unit());
    if (auto st = save_optimizer_state(*optimizer_, optimizer); !st.ok()) return st;
    archive.write("optimizer", optimizer);
    archive.write("steps", c10::IValue(steps_));
    std::vector<std::int64_t> streams;
    for (const FastDropout* d : model_->dropout_streams()) {
      for (std::uint64_t word : d->state()) streams.push_back(static_cast<std::int64_t>(word));
    }
    archive.write("dropout", torch::tensor(streams, torch::kInt64), true);
    archive.write("loss_scale", c10::IValue(scaler_.current_scale()));
    archive.write("loss_scale_clean", c10::IValue(scaler_.clean_steps()));
    archive.write("loss_scale_skipped", c10::IValue(scaler_.skipped_steps()));
  } catch (const std::exception& e) {
    return make_error(Code::internal, std::string("cannot save the training state: ") + e.what());
  }
  return {};
}

Status Trainer::load_state(torch::serialize::InputArchive& archive) {
  try {
    torch::NoGradGuard no_grad;
    torch::serialize::InputArchive model;
    if (!archive.try_read("model", model)) return make_error(Code::invalid_argument, "it holds no model");
    auto params = model_->parameters();
    auto buffers = model_->buffers();
    c10::IValue n_params, n_buffers;
    if (!model.try_read("params", n_params) || !model.try_read("buffers", n_buffers) ||
        n_params.toInt() != static_cast<std::int64_t>(params.size()) ||
        n_buffers.toInt() != static_cast<std::int64_t>(buffers.size())) {
      return make_error(Code::invalid_argument, "it is another model's (its tensors do not match)");
    }
    // Copied into the tensors the optimizer already knows, keeping their layout (channels-last convolutions).
    auto put = [&](const std::string& key, torch::Tensor into) -> Status {
      torch::Tensor saved;
      if (!model.try_read(key, saved, true) || saved.sizes() != into.sizes()) {
        return make_error(Code::invalid_argument, "it is another model's (" + key + " does not match)");
      }
      into.copy_(saved);
      return {};
    };
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (auto st = put("param_" + std::to_string(i), params[i]); !st.ok()) return st;
    }
    for (std::size_t i = 0; i < buffers.size(); ++i) {
      if (auto st = put("buffer_" + std::to_string(i), buffers[i]); !st.ok()) return st;
    }
    torch::serialize::InputArchive optimizer;
    if (!archive.try_read("optimizer", optimizer)) return make_error(Code::invalid_argument, "it holds no optimizer state");
    if (auto st = load_optimizer_state(*optimizer_, optimizer); !st.ok()) return st;
    c10::IValue steps, scale, clean, skipped;
    if (!archive.try_read("steps", steps) || !archive.try_read("loss_scale", scale) ||
        !archive.try_read("loss_scale_clean", clean) || !archive.try_read("loss_scale_skipped", skipped)) {
      return make_error(Code::invalid_argument, "it lacks the step count or the loss scale");
    }
    torch::Tensor streams;
    auto dropouts = model_->dropout_streams();
    if (!archive.try_read("dropout", streams, true) || streams.numel() != 4 * static_cast<std::int64_t>(dropouts.size())) {
      return make_error(Code::invalid_argument, "its dropout streams do not match the model's");
    }
    const auto words = streams.contiguous();
    for (std::size_t i = 0; i < dropouts.size(); ++i) {
      std::array<std::uint64_t, 4> s{};
      for (std::size_t k = 0; k < 4; ++k) s[k] = static_cast<std::uint64_t>(words[4 * i + k].item<std::int64_t>());
      dropouts[i]->set_state(s);
    }
    steps_ = steps.toInt();
    scaler_.restore(scale.toDouble(), clean.toInt(), skipped.toInt());
  } catch (const std::exception& e) {
    return make_error(Code::invalid_argument, std::string("cannot load the training state: ") + e.what());
  }
  return {};
}

bool Trainer::run_epoch(const Dataset& data, EpochCursor& cursor, const std::function<bool()>& pause) {
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
  if (!cursor.order.defined()) {
    cursor.order =
        torch::randperm(n, torch::TensorOptions().dtype(torch::kInt64).device(data.inputs.device()));
  }
  // The sums stay on the data's device until the epoch ends (or pauses): reading them every step would make the
  // CPU wait for a GPU at every step instead of queueing the next one.
  torch::Tensor loss_sum = torch::zeros({}, data.inputs.options().dtype(torch::kFloat64));
  torch::Tensor correct = torch::zeros({}, data.inputs.options().dtype(torch::kInt64));
  std::int64_t begin = cursor.begin;
  for (; begin < n; begin += batch) {
    if (pause && pause()) break;
    const std::int64_t len = std::min(batch, n - begin);
    const torch::Tensor index = cursor.order.narrow(0, begin, len);
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
  cursor.begin = std::min(begin, n);
  cursor.loss_sum += loss_sum.item<double>();
  cursor.correct += correct.item<std::int64_t>();
  cursor.seconds += seconds_since(start);
  return cursor.begin >= n;
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
