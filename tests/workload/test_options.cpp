#include <doctest/doctest.h>

#include "workload/train/options.h"
#include "workload/train/train_run.h"

namespace tw = tsum::workload;

TEST_CASE("options: defaults") {
  auto o = tw::parse_options({});
  REQUIRE(o.ok());
  CHECK(o->model == "mnist_cnn");
  CHECK_FALSE(o->dataset.has_value());
  CHECK_FALSE(o->data_dir.has_value());
  CHECK(o->epochs == 1);
  CHECK_FALSE(o->batch.has_value());
  CHECK_FALSE(o->lr.has_value());
  CHECK_FALSE(o->optimizer.has_value());
  CHECK_FALSE(o->decay.has_value());
  CHECK_FALSE(o->augment);
  CHECK(o->classes == 0);
  CHECK(o->image_size == 0);
  CHECK(o->threads == 0);
  CHECK(o->checkpoint == "model.pt");
  CHECK(o->seed == 1);
  CHECK(o->limit == 0);
  CHECK(o->test_limit == 0);
}

TEST_CASE("options: every flag, both spellings") {
  auto o = tw::parse_options({"--model", "resnet50", "--data=/d", "--epochs", "3", "--limit", "500",
                              "--test-limit=200", "--batch", "64", "--lr", "0.01", "--optimizer",
                              "sgd", "--threads", "2", "--checkpoint", "/tmp/m.pt", "--seed", "7",
                              "--dataset", "synthetic", "--decay=0", "--augment", "--classes", "5",
                              "--image-size", "64"});
  REQUIRE(o.ok());
  CHECK(o->model == "resnet50");
  CHECK(o->dataset == "synthetic");
  CHECK(o->decay == 0.0);
  CHECK(o->augment);
  CHECK(o->classes == 5);
  CHECK(o->image_size == 64);
  CHECK(o->data_dir == "/d");
  CHECK(o->epochs == 3);
  CHECK(o->limit == 500);
  CHECK(o->test_limit == 200);
  CHECK(o->batch == 64);
  CHECK(o->lr == doctest::Approx(0.01));
  CHECK(o->optimizer == "sgd");
  CHECK(o->threads == 2);
  CHECK(o->checkpoint == "/tmp/m.pt");
  CHECK(o->seed == 7);
  CHECK(tw::parse_options({"--help"})->help);
}

TEST_CASE("options: bad input names the flag") {
  const std::vector<std::vector<std::string>> bad = {
      {"--bogus", "1"}, {"--epochs", "0"}, {"--epochs", "two"}, {"--batch", "-1"},
      {"--lr", "0"},    {"--lr", "nan"},   {"--threads"},       {"--limit", "12x"},
      {"positional"},   {"--decay", "-1"}, {"--image-size", "31"}, {"--classes", "0"},
      {"--dataset", ""}, {"--device", "gpu"},  {"--precision", "int8"}};
  for (const auto& args : bad) {
    CAPTURE(args[0]);
    auto o = tw::parse_options(args);
    REQUIRE_FALSE(o.ok());
    CHECK(o.code() == tsum::Code::invalid_argument);
    CHECK(o.error().detail.find(args[0]) != std::string::npos);
  }
}

TEST_CASE("options: gen-cifar and gen-tokens take DIR, --n and --seed") {
  CHECK(tw::is_gen_command({"gen-cifar", "/d"}));
  CHECK(tw::is_gen_command({"gen-tokens"}));
  CHECK_FALSE(tw::is_gen_command({"--model", "gen-cifar"}));
  auto o = tw::parse_gen_options({"gen-tokens", "/d", "--n", "50", "--seed=9"});
  REQUIRE(o.ok());
  CHECK(o->command == "gen-tokens");
  CHECK(o->dir == "/d");
  CHECK(o->n == 50);
  CHECK(o->seed == 9);
  auto defaults = tw::parse_gen_options({"gen-cifar", "/d"});
  REQUIRE(defaults.ok());
  CHECK(defaults->n == 1000);
  CHECK(defaults->seed == 1);
  for (const auto& bad : std::vector<std::vector<std::string>>{
           {"gen-cifar"}, {"gen-cifar", "--n", "5"}, {"gen-cifar", "/d", "--n", "0"},
           {"gen-cifar", "/d", "--epochs", "2"}, {"gen-cifar", "/d", "extra"}}) {
    CAPTURE(bad.size());
    CHECK(tw::parse_gen_options(bad).code() == tsum::Code::invalid_argument);
  }
}

TEST_CASE("plan: each model's defaults fill what the flags leave out") {
  auto plan_of = [](const std::vector<std::string>& args) {
    auto o = tw::parse_options(args);
    REQUIRE(o.ok());
    auto plan = tw::plan_training(*o);
    REQUIRE_MESSAGE(plan.ok(), (plan.ok() ? "" : plan.error().detail));
    return *plan;
  };
  const auto mnist = plan_of({});
  CHECK(mnist.dataset == tw::DataKind::idx);
  CHECK(mnist.data_dir == "/usr/share/datasets/fashion-mnist");
  CHECK(mnist.batch == 128);
  CHECK(mnist.optimizer == "adam");
  CHECK(mnist.lr == doctest::Approx(0.001));
  CHECK(mnist.decay == 0.0);

  const auto cifar = plan_of({"--model", "cifar10_cnn"});
  CHECK(cifar.dataset == tw::DataKind::cifar10);
  CHECK(cifar.data_dir == "/usr/share/datasets/cifar-10-batches-bin");
  CHECK(cifar.batch == 32);
  CHECK(cifar.optimizer == "rmsprop");
  CHECK(cifar.lr == doctest::Approx(1e-4));
  CHECK(cifar.decay == doctest::Approx(1e-6));

  // Another optimizer brings its own default learning rate and no decay; flags win over both.
  const auto other = plan_of({"--model", "cifar10_cnn", "--optimizer", "adadelta"});
  CHECK(other.lr == doctest::Approx(1.0));
  CHECK(other.decay == 0.0);
  const auto given = plan_of({"--model", "cifar10_cnn", "--lr", "0.3", "--decay", "0.1",
                              "--batch", "8", "--data", "/c"});
  CHECK(given.lr == doctest::Approx(0.3));
  CHECK(given.decay == doctest::Approx(0.1));
  CHECK(given.batch == 8);
  CHECK(given.data_dir == "/c");

  CHECK(plan_of({"--model", "mnist_mlp"}).optimizer == "rmsprop");
  CHECK(plan_of({"--model", "bilstm"}).dataset == tw::DataKind::tokens);
  const auto resnet = plan_of({"--model", "resnet50", "--data", "/ignored"});
  CHECK(resnet.dataset == tw::DataKind::synthetic);
  CHECK(resnet.data_dir.empty());
  CHECK(resnet.optimizer == "momentum");
  CHECK(plan_of({"--dataset", "synthetic"}).dataset == tw::DataKind::synthetic);

  for (const auto& bad : std::vector<std::vector<std::string>>{
           {"--model", "vgg"}, {"--optimizer", "adamax"}, {"--dataset", "imagenet"},
           {"--model", "cifar_small", "--classes", "3"}}) {
    CAPTURE(bad[1]);
    auto o = tw::parse_options(bad);
    REQUIRE(o.ok());
    CHECK(tw::plan_training(*o).code() == tsum::Code::invalid_argument);
  }
}
