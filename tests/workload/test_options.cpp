#include <doctest/doctest.h>

#include <sched.h>

#include "workload/options.h"

namespace tw = tsum::workload;

TEST_CASE("options: defaults") {
  auto o = tw::parse_options({});
  REQUIRE(o.ok());
  CHECK(o->model == "mnist_cnn");
  CHECK(o->data_dir == "/usr/share/datasets/fashion-mnist");
  CHECK(o->epochs == 1);
  CHECK(o->batch == 128);
  CHECK(o->lr == doctest::Approx(0.001));
  CHECK(o->optimizer == "adam");
  CHECK(o->threads == 0);
  CHECK(o->checkpoint == "model.pt");
  CHECK(o->seed == 1);
  CHECK(o->limit == 0);
  CHECK(o->test_limit == 0);
}

TEST_CASE("options: every flag, both spellings") {
  auto o = tw::parse_options({"--model", "mnist_cnn", "--data=/d", "--epochs", "3", "--limit", "500",
                              "--test-limit=200", "--batch", "64", "--lr", "0.01", "--optimizer",
                              "sgd", "--threads", "2", "--checkpoint", "/tmp/m.pt", "--seed", "7"});
  REQUIRE(o.ok());
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
      {"positional"}};
  for (const auto& args : bad) {
    CAPTURE(args[0]);
    auto o = tw::parse_options(args);
    REQUIRE_FALSE(o.ok());
    CHECK(o.code() == tsum::Code::invalid_argument);
    CHECK(o.error().detail.find(args[0]) != std::string::npos);
  }
}

TEST_CASE("options: default thread count is the affinity mask size") {
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(sched_getaffinity(0, sizeof(set), &set) == 0);
  CHECK(tw::affinity_cpu_count() == CPU_COUNT(&set));
}
