#include "workload/train_run.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "workload/cpus.h"
#include "workload/model_registry.h"
#include "workload/optimizer_registry.h"
#include "workload/synthetic_data.h"
#include "workload/trainer.h"

namespace tsum::workload {
namespace {

struct Splits {
  Dataset train;
  Dataset test;
};

// A different seed per split, so the test set is not a copy of the training set's start.
std::uint64_t split_seed(std::uint64_t seed, Split split) {
  return seed * 2 + (split == Split::test ? 1 : 0);
}

Result<Splits> load_files(const TrainingPlan& plan, const Options& options) {
  auto train = load_dataset(plan.dataset, plan.data_dir, Split::train, options.limit);
  if (!train.ok()) return train.error();
  auto test = load_dataset(plan.dataset, plan.data_dir, Split::test, options.test_limit);
  if (!test.ok()) return test.error();
  return Splits{std::move(*train), std::move(*test)};
}

Result<Splits> make_synthetic(const InputShape& shape, const Options& options) {
  const std::int64_t train_n = options.limit > 0 ? options.limit : kSyntheticTrainSize;
  const std::int64_t test_n = options.test_limit > 0 ? options.test_limit : kSyntheticTestSize;
  auto train = make_synthetic_dataset(shape, train_n, split_seed(options.seed, Split::train));
  if (!train.ok()) return train.error();
  auto test = make_synthetic_dataset(shape, test_n, split_seed(options.seed, Split::test));
  if (!test.ok()) return test.error();
  return Splits{std::move(*train), std::move(*test)};
}

Result<std::int64_t> save_model(const std::shared_ptr<Model>& model, const std::string& path) {
  try {
    torch::save(model, path);
  } catch (const std::exception& e) {
    return make_error(Code::unavailable, path + ": cannot save model: " + e.what());
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return make_error(Code::unavailable, path + ": saved model is missing");
  }
  return static_cast<std::int64_t>(st.st_size);
}

void set_threads(const Options& options) {
  const int threads = options.threads > 0 ? options.threads : usable_cpu_count();
  try {
    at::set_num_interop_threads(1);
  } catch (const std::exception&) {
    // Already set (a second run in the same process); the first setting stands.
  }
  torch::set_num_threads(threads);
}

// Trains for the requested epochs, evaluates and saves, emitting the events after "ready".
Status train_evaluate_save(Trainer& trainer, const std::shared_ptr<Model>& model,
                           const Splits& data, const Options& options, double load_seconds,
                           EventWriter& events) {
  double learn_seconds = 0.0;
  for (std::int64_t epoch = 1; epoch <= options.epochs; ++epoch) {
    auto stats = trainer.train_epoch(data.train);
    if (!stats.ok()) return stats.error();
    learn_seconds += stats->seconds;
    events.emit("epoch", {{"epoch", epoch},
                          {"epochs", options.epochs},
                          {"loss", stats->loss},
                          {"train_accuracy", stats->accuracy},
                          {"images_per_s", static_cast<double>(stats->images) / stats->seconds},
                          {"seconds", stats->seconds}});
  }
  const double learned = static_cast<double>(data.train.size() * options.epochs);
  // Data loading as a share of learn time: reading and normalizing the files once, plus gathering
  // every shuffled batch.
  const double data_seconds = load_seconds + trainer.batch_gather_seconds();
  events.emit("learn_end", {{"epochs", options.epochs},
                            {"seconds", learn_seconds},
                            {"images_per_s", learned / learn_seconds},
                            {"data_seconds", data_seconds},
                            {"data_fraction", data_seconds / learn_seconds}});

  auto eval = trainer.evaluate(data.test);
  if (!eval.ok()) return eval.error();
  events.emit("verify", {{"test_accuracy", eval->accuracy},
                         {"test_loss", eval->loss},
                         {"test_images", eval->images}});

  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(options.checkpoint, ec);
  const std::string path = ec ? options.checkpoint : absolute.lexically_normal().string();
  if (!options.placement.device.is_cpu()) model->to(torch::kCPU);  // a checkpoint any host can load
  auto bytes = save_model(model, path);
  if (!bytes.ok()) return bytes.error();
  events.emit("saved", {{"path", path}, {"bytes", *bytes}});
  return {};
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Moves the model and both splits to the placement's device (a no-op on the CPU).
Status place(const Placement& placement, Model& model, Splits& data) {
  if (placement.device.is_cpu()) return {};
  try {
    model.to(placement.device);
    for (Dataset* split : {&data.train, &data.test}) {
      split->inputs = split->inputs.to(placement.device);
      split->labels = split->labels.to(placement.device);
    }
  } catch (const std::exception& e) {
    return make_error(Code::unavailable,
                      "cannot move the model and data to " + device_name(placement.device) + ": " +
                          e.what());
  }
  return {};
}

}  // namespace

Result<TrainingPlan> plan_training(const Options& options) {
  auto info = find_model(options.model);
  if (!info.ok()) return info.error();
  if (auto st = check_model_config(**info, {options.classes, options.image_size, 0}); !st.ok()) {
    return st.error();
  }
  const TrainingDefaults& defaults = (*info)->defaults;
  TrainingPlan plan;
  plan.dataset = defaults.dataset;
  if (options.dataset) {
    auto kind = parse_data_kind(*options.dataset);
    if (!kind.ok()) return kind.error();
    plan.dataset = *kind;
  }
  plan.data_dir = options.data_dir.value_or(std::string(default_data_dir(plan.dataset)));
  if (plan.dataset == DataKind::synthetic) plan.data_dir.clear();
  plan.batch = options.batch.value_or(defaults.batch);
  plan.optimizer = options.optimizer.value_or(std::string(defaults.optimizer));
  auto optimizer_lr = default_learning_rate(plan.optimizer);
  if (!optimizer_lr.ok()) return optimizer_lr.error();
  const bool model_optimizer = plan.optimizer == defaults.optimizer;
  plan.lr = options.lr.value_or(model_optimizer ? defaults.lr : *optimizer_lr);
  plan.decay = options.decay.value_or(model_optimizer ? defaults.decay : 0.0);
  return plan;
}

Status run_training(const Options& options, EventWriter& events) {
  if (auto st = check_placement(options.placement); !st.ok()) return st;
  set_threads(options);
  torch::manual_seed(options.seed);
  auto plan = plan_training(options);
  if (!plan.ok()) return plan.error();

  ModelConfig config{options.classes, options.image_size, 0};
  Result<Splits> data = make_error(Code::internal, "no data");
  // Data loading: reading and normalizing the files (or generating synthetic data), not the model.
  auto load_start = std::chrono::steady_clock::now();
  double load_seconds = 0.0;
  if (plan->dataset != DataKind::synthetic) {
    data = load_files(*plan, options);
    load_seconds = seconds_since(load_start);
    if (!data.ok()) return data.error();
    config.vocab = std::max(data->train.vocab, data->test.vocab);
  }
  auto model = make_model(options.model, config);
  if (!model.ok()) return model.error();
  const InputShape shape = (*model)->input_shape();
  if (plan->dataset == DataKind::synthetic) {
    load_start = std::chrono::steady_clock::now();
    data = make_synthetic(shape, options);
    if (!data.ok()) return data.error();
    load_seconds = seconds_since(load_start);
  }
  for (const Dataset* split : {&data->train, &data->test}) {
    if (auto st = check_dataset(*split, shape, options.model); !st.ok()) return st;
  }
  if (options.augment && shape.kind != InputKind::image) {
    return make_error(Code::invalid_argument,
                      "--augment transforms images; model " + options.model + " reads tokens");
  }
  if (auto st = place(options.placement, **model, *data); !st.ok()) return st;
  auto optimizer = make_optimizer(plan->optimizer, (*model)->parameters(), plan->lr);
  if (!optimizer.ok()) return optimizer.error();

  events.emit("ready", {{"model", options.model},
                        {"params", (*model)->parameter_count()},
                        {"threads", std::int64_t{torch::get_num_threads()}},
                        {"train_images", data->train.size()},
                        {"test_images", data->test.size()},
                        {"device", device_name(options.placement.device)},
                        {"precision", std::string(precision_name(options.placement.precision))},
                        {"cpu_bf16", cpu_bf16_support()},
                        {"load_seconds", load_seconds},
                        {"dataset", std::string(data_kind_name(plan->dataset))},
                        {"optimizer", plan->optimizer},
                        {"batch", plan->batch},
                        {"lr", plan->lr}});
  Trainer trainer(*model, std::move(*optimizer),
                  {plan->batch, plan->decay, options.augment, options.placement});
  return train_evaluate_save(trainer, *model, *data, options, load_seconds, events);
}

int exit_code_for(const Status& status) {
  if (status.ok()) return 0;
  switch (status.code()) {
    case Code::invalid_argument:
    case Code::not_found:
      return 2;
    default:
      return 1;
  }
}

}  // namespace tsum::workload
