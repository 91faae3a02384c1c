#include "workload/train/train_run.h"

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>

#include "workload/machine/cpus.h"
#include "workload/distributed/data_parallel.h"
#include "workload/distributed/distributed.h"
#include "workload/models/model_registry.h"
#include "workload/optim/optimizer_registry.h"
#include "workload/data/synthetic_data.h"
#include "workload/train/train_state.h"
#include "workload/train/trainer.h"

namespace tsum::workload {
namespace {

std::atomic<bool> g_stop{false};
extern "C" void on_stop_signal(int) { g_stop.store(true); }

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

Status verify_and_save(Trainer& trainer, const std::shared_ptr<Model>& model, const Splits& data,
                       const Options& options, EventWriter& events);

std::string absolute_path(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  return ec ? path : absolute.lexically_normal().string();
}

// Trains for the requested epochs (from a checkpoint's epoch and step with --resume), evaluates and saves,
// emitting the events after "ready". Between two steps it writes a checkpoint when --checkpoint-every has
// passed, or when SIGTERM came (then it stops: Code::cancelled).
Status train_evaluate_save(Trainer& trainer, const std::shared_ptr<Model>& model,
                           const Splits& data, const Options& options, double load_seconds,
                           EventWriter& events) {
  TrainProgress at;
  at.model = options.model;
  if (options.resume) {
    auto resumed = load_training_state(*options.resume, trainer, options.model);
    if (!resumed.ok()) return resumed.error();
    at = std::move(*resumed);
    if (at.epoch > options.epochs) {
      return make_error(Code::invalid_argument, *options.resume + ": it is at epoch " + std::to_string(at.epoch) +
                                                    ", past --epochs " + std::to_string(options.epochs));
    }
    events.emit("resumed", {{"epoch", at.epoch},
                            {"examples", at.cursor.begin},
                            {"step", trainer.steps()},
                            {"learn_seconds", at.learn_seconds},
                            {"path", absolute_path(*options.resume)}});
  }
  const std::string state_path = absolute_path(options.state);
  const auto every = std::chrono::duration<double>(options.checkpoint_every);
  auto last_checkpoint = std::chrono::steady_clock::now();
  auto due = [&] {
    return g_stop.load() || (options.checkpoint_every > 0 && std::chrono::steady_clock::now() - last_checkpoint >= every);
  };
  const double learned_before = at.learn_seconds + at.cursor.seconds;  // in processes before this one
  for (; at.epoch <= options.epochs; ++at.epoch, at.cursor = {}) {
    for (;;) {
      auto complete = trainer.train_epoch_from(data.train, at.cursor, due);
      if (!complete.ok()) return complete.error();
      if (*complete) break;
      const bool stopping = g_stop.load();
      auto bytes = save_training_state(state_path, trainer, at);
      if (!bytes.ok()) return bytes.error();
      last_checkpoint = std::chrono::steady_clock::now();
      events.emit("checkpoint", {{"epoch", at.epoch},
                                 {"examples", at.cursor.begin},
                                 {"step", trainer.steps()},
                                 {"learn_seconds", at.learn_seconds + at.cursor.seconds},
                                 {"path", state_path},
                                 {"bytes", *bytes},
                                 {"reason", std::string(stopping ? "signal" : "periodic")}});
      if (stopping) return make_error(Code::cancelled, "stopped by SIGTERM; the checkpoint is " + state_path);
    }
    const EpochStats stats = Trainer::epoch_stats(at.cursor);
    at.learn_seconds += stats.seconds;
    events.emit("epoch", {{"epoch", at.epoch},
                          {"epochs", options.epochs},
                          {"loss", stats.loss},
                          {"train_accuracy", stats.accuracy},
                          {"images_per_s", static_cast<double>(stats.images) / std::max(stats.seconds, 1e-9)},
                          {"seconds", stats.seconds}});
  }
  const double learn_seconds = at.learn_seconds;
  // What this process learned (a resumed run's earlier epochs were learned elsewhere).
  const double here = std::max(learn_seconds - learned_before, 1e-9);
  const double learned = static_cast<double>(data.train.size() * options.epochs);
  // Data loading as a share of learn time: reading and normalizing the files once, plus gathering
  // every shuffled batch.
  const double data_seconds = load_seconds + trainer.batch_gather_seconds();
  std::vector<EventField> fields = {{"epochs", options.epochs},
                                    {"seconds", learn_seconds},
                                    {"images_per_s", learned / std::max(learn_seconds, 1e-9)},
                                    {"data_seconds", data_seconds},
                                    {"data_fraction", data_seconds / here}};
  if (options.resume) fields.emplace_back("seconds_here", here);
  events.emit("learn_end", fields);

  return verify_and_save(trainer, model, data, options, events);
}

// Evaluates on the test split and saves the checkpoint: "verify" and "saved".
Status verify_and_save(Trainer& trainer, const std::shared_ptr<Model>& model, const Splits& data,
                       const Options& options, EventWriter& events) {
  auto eval = trainer.evaluate(data.test);
  if (!eval.ok()) return eval.error();
  events.emit("verify", {{"test_accuracy", eval->accuracy},
                         {"test_loss", eval->loss},
                         {"test_images", eval->images}});

  const std::string path = absolute_path(options.checkpoint);
  if (!options.placement.device.is_cpu()) model->to(torch::kCPU);  // a checkpoint any host can load
  auto bytes = save_model(model, path);
  if (!bytes.ok()) return bytes.error();
  events.emit("saved", {{"path", path}, {"bytes", *bytes}});
  return {};
}

// A data-parallel run: joins the other ranks, trains this rank's part, and on rank 0 reports the
// run's learn_end, verifies and saves. A failure of any rank ends this process (DistGroup::abort).
Status train_distributed(Trainer& trainer, const std::shared_ptr<Model>& model, const Splits& data,
                         const Options& options, std::int64_t batch, double load_seconds,
                         EventWriter& events) {
  DataParallelPlan plan{options.dist.mode, options.dist.ps_async, options.epochs, batch, options.seed};
  // Spot: each rank resumes from its own checkpoint, and checkpoints where the ranks agree (data_parallel.h).
  double learned_before = 0.0;
  if (options.resume) {
    auto resumed = load_training_state(*options.resume, trainer, options.model);
    if (!resumed.ok()) return resumed.error();
    const TrainProgress& at = *resumed;
    if (at.epoch > options.epochs)
      return make_error(Code::invalid_argument, *options.resume + ": it is at epoch " + std::to_string(at.epoch) +
                                                    ", past --epochs " + std::to_string(options.epochs));
    plan.resume = DistProgress{at.epoch,        at.cursor.begin, at.cursor.loss_sum, static_cast<double>(at.cursor.correct),
                               at.share_examples, at.cursor.seconds, at.learn_seconds, at.cursor.order, at.order_rng};
    learned_before = at.learn_seconds + at.cursor.seconds;
    events.emit("resumed", {{"epoch", at.epoch},
                            {"examples", at.cursor.begin},
                            {"step", trainer.steps()},
                            {"learn_seconds", learned_before},
                            {"path", absolute_path(*options.resume)}});
  }
  // The ranks' agreement costs an all-reduce a step: only where checkpoints are asked for (tsum's spot runs).
  if (options.checkpoint_every > 0 || options.resume) {
    const std::string state_path = absolute_path(options.state);
    plan.stop = [] { return g_stop.load(); };
    plan.checkpoint_every_s = options.checkpoint_every;
    plan.save = [&trainer, &events, &options, state_path](const DistProgress& d, bool stopping) -> Status {
      TrainProgress at;
      at.model = options.model;
      at.epoch = d.epoch;
      at.cursor.order = d.order;
      at.cursor.begin = d.begin;
      at.cursor.loss_sum = d.loss_sum;
      at.cursor.correct = static_cast<std::int64_t>(d.correct);
      at.cursor.seconds = d.epoch_seconds;
      at.learn_seconds = d.learn_seconds;
      at.order_rng = d.order_rng;
      at.share_examples = d.examples;
      auto bytes = save_training_state(state_path, trainer, at);
      if (!bytes.ok()) return bytes.error();
      events.emit("checkpoint", {{"epoch", d.epoch},
                                 {"examples", d.begin},
                                 {"step", trainer.steps()},
                                 {"learn_seconds", d.learn_seconds + d.epoch_seconds},
                                 {"path", state_path},
                                 {"bytes", *bytes},
                                 {"reason", std::string(stopping ? "signal" : "periodic")}});
      return {};
    };
  }
  auto group = DistGroup::join(options.dist);
  if (!group.ok()) return group.error();
  DistGroup& g = **group;
  auto stats = train_data_parallel(g, trainer, data.train, plan, events);
  if (!stats.ok() && stats.code() == Code::cancelled) {  // every rank stopped at one checkpoint
    g.finish();
    return stats.error();
  }
  if (!stats.ok()) g.abort(stats.error());
  const double learn = stats->learn_seconds + learned_before;
  const double data_seconds = load_seconds + stats->gather_seconds;
  std::vector<EventField> fields = {
      {"epochs", options.epochs},
      {"seconds", learn},
      {"images_per_s", static_cast<double>(stats->images) / learn},
      {"data_seconds", data_seconds},
      {"data_fraction", data_seconds / learn},
      {"world_size", std::int64_t{g.size()}},
      {"dist", std::string(options.dist.mode == DistMode::ring ? "ring"
                           : options.dist.ps_async          ? "ps-async"
                                                            : "ps")},
      {"updates", stats->updates},
      {"comm_seconds", stats->comm_seconds},
      {"comm_fraction", stats->comm_seconds / learn},
      {"comm_seconds_mean", stats->comm_seconds_all / g.size()},
      {"bytes_sent", stats->bytes_sent},
      {"bytes_sent_all", stats->bytes_sent_all}};
  if (options.dist.ps_async && g.rank() == 0) {
    fields.emplace_back("staleness_mean", stats->staleness_mean);
    fields.emplace_back("staleness_max", stats->staleness_max);
  }
  events.emit("learn_end", fields);
  if (g.rank() != 0) {
    g.finish();
    return {};
  }
  auto st = verify_and_save(trainer, model, data, options, events);
  g.finish();
  return st;
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
  if (auto st = check_dist_options(options, plan->batch); !st.ok()) return st;
  const bool distributed = options.dist.world_size > 1;
  if (distributed && options.dist.ps_async && (options.resume || options.checkpoint_every > 0)) {
    return make_error(Code::invalid_argument,
                      "--resume and --checkpoint-every need a step every rank shares: --dist ring or ps, not ps async");
  }

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
  // A data-parallel rank seeds its own stream before building the model: the model's own dropout
  // generator (fast_dropout.h) is seeded from it, so ranks draw different masks; the initial
  // parameters are rank 0's on every rank anyway (broadcast), and the shared order has its own
  // generator (data_parallel.h).
  if (distributed) torch::manual_seed(options.seed + static_cast<std::uint64_t>(options.dist.rank));
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

  if (distributed) events.add_common("rank", std::int64_t{options.dist.rank});
  std::vector<EventField> ready = {{"model", options.model},
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
                        {"lr", plan->lr}};
  if (distributed) ready.emplace_back("world_size", std::int64_t{options.dist.world_size});
  events.emit("ready", ready);
  if (distributed) {
    // Each rank's forward passes see batch/N examples (ps async: the whole batch); evaluation
    // runs in batches of the global batch.
    Trainer trainer(*model, std::move(*optimizer),
                    {plan->batch, plan->decay, options.augment, options.placement});
    return train_distributed(trainer, *model, *data, options, plan->batch, load_seconds, events);
  }
  Trainer trainer(*model, std::move(*optimizer),
                  {plan->batch, plan->decay, options.augment, options.placement});
  return train_evaluate_save(trainer, *model, *data, options, load_seconds, events);
}

void install_stop_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  // A peer rank that died closes its sockets: a write to one must fail (and be reported, naming the rank), not
  // kill this process silently with SIGPIPE (seen under load in test_distributed's killed-rank case).
  signal(SIGPIPE, SIG_IGN);
}

int exit_code_for(const Status& status) {
  if (status.ok()) return 0;
  switch (status.code()) {
    case Code::cancelled:
      return kExitStopped;
    case Code::invalid_argument:
    case Code::not_found:
      return 2;
    default:
      return 1;
  }
}

}  // namespace tsum::workload
