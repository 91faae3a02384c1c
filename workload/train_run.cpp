#include "workload/train_run.h"

#include <sys/stat.h>

#include <filesystem>

#include "workload/dataset.h"
#include "workload/model_registry.h"
#include "workload/optimizer_registry.h"
#include "workload/trainer.h"

namespace tsum::workload {
namespace {

Status check_shape(const Dataset& data, const Options& options, const InputShape& shape) {
  const auto sizes = data.images.sizes();
  if (sizes[1] != shape.channels || sizes[2] != shape.height || sizes[3] != shape.width) {
    return make_error(Code::invalid_argument,
                      data.images_path + ": images are " + std::to_string(sizes[2]) + "x" +
                          std::to_string(sizes[3]) + ", model " + options.model + " expects " +
                          std::to_string(shape.height) + "x" + std::to_string(shape.width));
  }
  return {};
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

}  // namespace

Status run_training(const Options& options, EventWriter& events) {
  const int threads = options.threads > 0 ? options.threads : affinity_cpu_count();
  try {
    at::set_num_interop_threads(1);
  } catch (const std::exception&) {
    // Already set (a second run in the same process); the first setting stands.
  }
  torch::set_num_threads(threads);
  torch::manual_seed(options.seed);

  auto model = make_model(options.model);
  if (!model.ok()) return model.error();
  auto optimizer = make_optimizer(options.optimizer, (*model)->parameters(), options.lr);
  if (!optimizer.ok()) return optimizer.error();
  const InputShape shape = (*model)->input_shape();

  auto train = load_dataset(options.data_dir, kTrainPrefix, options.limit, shape.classes);
  if (!train.ok()) return train.error();
  if (auto st = check_shape(*train, options, shape); !st.ok()) return st;
  auto test = load_dataset(options.data_dir, kTestPrefix, options.test_limit, shape.classes);
  if (!test.ok()) return test.error();
  if (auto st = check_shape(*test, options, shape); !st.ok()) return st;

  events.emit("ready", {{"model", options.model},
                        {"params", (*model)->parameter_count()},
                        {"threads", std::int64_t{torch::get_num_threads()}},
                        {"train_images", train->size()},
                        {"test_images", test->size()},
                        {"device", std::string("cpu")}});

  Trainer trainer(*model, std::move(*optimizer), options.batch);
  double learn_seconds = 0.0;
  for (std::int64_t epoch = 1; epoch <= options.epochs; ++epoch) {
    auto stats = trainer.train_epoch(*train);
    if (!stats.ok()) return stats.error();
    learn_seconds += stats->seconds;
    events.emit("epoch", {{"epoch", epoch},
                          {"epochs", options.epochs},
                          {"loss", stats->loss},
                          {"train_accuracy", stats->accuracy},
                          {"images_per_s", static_cast<double>(stats->images) / stats->seconds},
                          {"seconds", stats->seconds}});
  }
  const double learned = static_cast<double>(train->size() * options.epochs);
  events.emit("learn_end", {{"epochs", options.epochs},
                            {"seconds", learn_seconds},
                            {"images_per_s", learned / learn_seconds}});

  auto eval = trainer.evaluate(*test);
  if (!eval.ok()) return eval.error();
  events.emit("verify", {{"test_accuracy", eval->accuracy},
                         {"test_loss", eval->loss},
                         {"test_images", eval->images}});

  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(options.checkpoint, ec);
  const std::string path = ec ? options.checkpoint : absolute.lexically_normal().string();
  auto bytes = save_model(*model, path);
  if (!bytes.ok()) return bytes.error();
  events.emit("saved", {{"path", path}, {"bytes", *bytes}});
  return {};
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
