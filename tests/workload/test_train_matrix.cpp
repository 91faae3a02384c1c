// Every model trains with every optimizer: a few steps on one fixed, learnable synthetic batch
// (seeded), and the loss falls. Models run at the sizes the test can afford: resnet50 with 10
// classes on 64x64 images in batches of 2, bilstm with a 200-id vocabulary.
#include "doctest_torch.h"

#include <cmath>
#include <numeric>

#include "workload/models/model_registry.h"
#include "workload/optim/optimizer_registry.h"
#include "workload/data/synthetic_data.h"
#include "workload/train/trainer.h"

namespace tw = tsum::workload;

namespace {

constexpr std::size_t kWindow = 3;  // steps averaged at each end

const std::vector<std::string> kOptimizers = {"sgd",  "momentum", "nesterov", "rmsprop",
                                              "adam", "adagrad",  "adadelta", "nadam"};

// Learning rates for the SGD family: the defaults (0.01) move the networks without batch norm too
// little in ten steps for a clear signal, while resnet50 with batch norm over 2 images jumps about
// at them (its loss on the batch falls, but not step by step).
struct SgdRates {
  double plain = 0.1;
  double momentum = 0.03;
};

double test_learning_rate(const std::string& name, const SgdRates& sgd) {
  if (name == "sgd") return sgd.plain;
  if (name == "momentum" || name == "nesterov") return sgd.momentum;
  return *tw::default_learning_rate(name);
}

double mean(const std::vector<double>& v, std::size_t from, std::size_t count) {
  return std::accumulate(v.begin() + static_cast<std::ptrdiff_t>(from),
                         v.begin() + static_cast<std::ptrdiff_t>(from + count), 0.0) /
         static_cast<double>(count);
}

// Trains `model` with each optimizer at test_learning_rate for `steps` steps on one batch of
// `batch` synthetic examples, on the test device in each of its precisions (doctest_torch.h);
// checks that the mean loss of the last kWindow steps is below that of the first kWindow.
void check_every_optimizer_learns(const std::string& model, const tw::ModelConfig& config,
                                  std::int64_t batch, int steps, const SgdRates& sgd = {}) {
  const torch::Device device = tsum::test::test_device();
  for (const auto precision : tsum::test::test_precisions())
  for (const auto& name : kOptimizers) {
    CAPTURE(model);
    CAPTURE(name);
    CAPTURE(tw::device_name(device));
    CAPTURE(tw::precision_name(precision));
    torch::manual_seed(7);
    auto net = tw::make_model(model, config);
    REQUIRE(net.ok());
    auto data = tw::make_synthetic_dataset((*net)->input_shape(), batch, 3);
    REQUIRE(data.ok());
    (*net)->to(device);
    data->inputs = data->inputs.to(device);
    data->labels = data->labels.to(device);
    auto opt = tw::make_optimizer(name, (*net)->parameters(), test_learning_rate(name, sgd));
    REQUIRE(opt.ok());
    // fp16 starts its loss scale at 128, not PyTorch's 65536, so the few steps a case affords are not spent
    // backing off (resnet50 overflowed at every scale from 65536 down to 2048 on an H200); the back-off has its own
    // case (test_device.cpp).
    tw::Trainer trainer(*net, std::move(*opt), {batch, 0.0, false, {device, precision}, {.initial_scale = 128.0}});
    std::vector<double> losses;
    for (int s = 0; s < steps; ++s) {
      auto loss = trainer.train_step(data->inputs, data->labels);
      REQUIRE_MESSAGE(loss.ok(), (loss.ok() ? "" : loss.error().detail));
      REQUIRE(std::isfinite(*loss));
      losses.push_back(*loss);
    }
    const double first = mean(losses, 0, kWindow);
    const double last = mean(losses, losses.size() - kWindow, kWindow);
    CAPTURE(first);
    CAPTURE(last);
    CHECK(last < first);
    for (const auto& p : (*net)->parameters()) {
      CHECK(p.device() == device);
      CHECK((p.scalar_type() == torch::kFloat));  // autocast leaves the parameters fp32
    }
  }
}

}  // namespace

TEST_CASE("train matrix: mnist_cnn learns with every optimizer") {
  check_every_optimizer_learns("mnist_cnn", {}, 16, 10);
}

TEST_CASE("train matrix: mnist_mlp learns with every optimizer") {
  check_every_optimizer_learns("mnist_mlp", {}, 16, 10);
}

TEST_CASE("train matrix: cifar10_cnn learns with every optimizer") {
  check_every_optimizer_learns("cifar10_cnn", {}, 16, 10);
}

TEST_CASE("train matrix: cifar_small learns with every optimizer") {
  check_every_optimizer_learns("cifar_small", {}, 16, 10);
}

TEST_CASE("train matrix: bilstm learns with every optimizer") {
  check_every_optimizer_learns("bilstm", {0, 0, 200}, 16, 10);
}

TEST_CASE("train matrix: resnet50 learns with every optimizer") {
  // On a GPU (TF32 convolutions, batch norm over 2 images) plain SGD's loss wanders over 6 steps; 12 cost little there.
  const int steps = tsum::test::test_device().is_cpu() ? 6 : 12;
  check_every_optimizer_learns("resnet50", {10, 64, 0}, 2, steps, {0.003, 0.001});
}

TEST_CASE("train matrix: cifar10_cnn with augmentation and decay, through whole epochs") {
  const torch::Device device = tsum::test::test_device();
  torch::manual_seed(8);
  auto net = tw::make_model("cifar10_cnn");
  REQUIRE(net.ok());
  auto data = tw::make_synthetic_dataset((*net)->input_shape(), 96, 4);
  REQUIRE(data.ok());
  (*net)->to(device);
  data->inputs = data->inputs.to(device);
  data->labels = data->labels.to(device);
  auto opt = tw::make_optimizer("rmsprop", (*net)->parameters(), 1e-3);
  REQUIRE(opt.ok());
  tw::Trainer trainer(*net, std::move(*opt), {16, 1e-3, true, {device, tw::Precision::fp32}});
  std::vector<double> losses;
  for (int epoch = 0; epoch < 4; ++epoch) {
    auto stats = trainer.train_epoch(*data);
    REQUIRE_MESSAGE(stats.ok(), (stats.ok() ? "" : stats.error().detail));
    CHECK(stats->images == 96);
    losses.push_back(stats->loss);
  }
  CHECK(trainer.steps() == 4 * 6);
  CHECK(losses.back() < losses.front());
  auto eval = trainer.evaluate(*data);
  REQUIRE(eval.ok());
  CHECK(eval->accuracy > 0.3);  // 10 classes: chance is 0.1
}
