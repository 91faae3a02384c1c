#include "doctest_torch.h"

#include "workload/models/fast_dropout.h"
#include "workload/optim/fused_adam.h"
#include "workload/models/mnist_cnn.h"
#include "workload/models/model_registry.h"
#include "workload/optim/optimizer_registry.h"

namespace tw = tsum::workload;

TEST_CASE("model: mnist_cnn by name gives [N,10] logits and the Keras parameter count") {
  torch::manual_seed(1);
  auto model = tw::make_model("mnist_cnn");
  REQUIRE(model.ok());
  CHECK((*model)->parameter_count() == 1199882);
  const auto shape = (*model)->input_shape();
  CHECK(shape.height == 28);
  CHECK(shape.classes == 10);
  (*model)->eval();
  torch::NoGradGuard no_grad;
  const auto out = (*model)->forward(torch::rand({7, 1, 28, 28}));
  CHECK((out.sizes() == torch::IntArrayRef({7, 10})));
  CHECK(torch::isfinite(out).all().item<bool>());
}

TEST_CASE("model: dropout is active in training mode only") {
  torch::manual_seed(2);
  auto model = tw::make_model("mnist_cnn");
  REQUIRE(model.ok());
  torch::NoGradGuard no_grad;
  const auto x = torch::rand({4, 1, 28, 28});
  (*model)->eval();
  CHECK(torch::equal((*model)->forward(x), (*model)->forward(x)));
  (*model)->train();
  CHECK_FALSE(torch::equal((*model)->forward(x), (*model)->forward(x)));
}

TEST_CASE("model: unknown name lists the known ones") {
  auto model = tw::make_model("resnet9000");
  REQUIRE_FALSE(model.ok());
  CHECK(model.code() == tsum::Code::invalid_argument);
  CHECK(model.error().detail.find("mnist_cnn") != std::string::npos);
}

TEST_CASE("optimizer: adam and sgd by name take a step that lowers the loss") {
  for (const char* name : {"adam", "sgd"}) {
    CAPTURE(name);
    torch::manual_seed(3);
    auto model = tw::make_model("mnist_cnn");
    REQUIRE(model.ok());
    auto opt = tw::make_optimizer(name, (*model)->parameters(), name == std::string("sgd") ? 0.1 : 1e-3);
    REQUIRE(opt.ok());
    (*model)->eval();  // deterministic forward so the comparison is fair
    const auto x = torch::rand({16, 1, 28, 28});
    const auto y = torch::randint(0, 10, {16}, torch::kInt64);
    const auto before = torch::cross_entropy_loss((*model)->forward(x), y);
    before.backward();
    (*opt)->step();
    torch::NoGradGuard no_grad;
    const auto after = torch::cross_entropy_loss((*model)->forward(x), y);
    CHECK(after.item<double>() < before.item<double>());
  }
}

TEST_CASE("optimizer: unknown name or bad lr is invalid_argument") {
  auto model = tw::make_model("mnist_cnn");
  REQUIRE(model.ok());
  CHECK(tw::make_optimizer("adamax9", (*model)->parameters(), 1e-3).code() ==
        tsum::Code::invalid_argument);
  CHECK(tw::make_optimizer("adam", (*model)->parameters(), 0.0).code() ==
        tsum::Code::invalid_argument);
}

TEST_CASE("fast dropout: keeps about 1-p of the elements, scales them, passes gradients by mask") {
  torch::manual_seed(4);
  tw::FastDropout dropout;
  const auto x = torch::ones({1000, 1000}, torch::requires_grad());
  const auto y = dropout(x, 0.25, true);
  const double kept = y.ne(0).to(torch::kFloat64).mean().item<double>();
  CHECK(kept == doctest::Approx(0.75).epsilon(0.005));
  CHECK(y.max().item<float>() == doctest::Approx(1.0 / 0.75));
  y.sum().backward();
  CHECK(torch::equal(x.grad(), y.detach()));  // d(sum(x*m))/dx = m, and y = 1*m

  CHECK(torch::equal(dropout(x, 0.5, false), x));
  CHECK(torch::equal(dropout(x, 0.0, true), x));
  CHECK(dropout(x, 1.0, true).abs().sum().item<float>() == 0.0f);
  // Consecutive masks differ; a channels-last input keeps its format.
  CHECK_FALSE(torch::equal(dropout(x, 0.5, true), dropout(x, 0.5, true)));
  const auto nhwc = torch::ones({2, 3, 4, 5}).contiguous(torch::MemoryFormat::ChannelsLast);
  CHECK(dropout(nhwc, 0.5, true).is_contiguous(torch::MemoryFormat::ChannelsLast));
}

TEST_CASE("model: mnist_cnn matches a plain NCHW relu-then-pool computation of the same weights") {
  torch::manual_seed(5);
  auto model = tw::make_model("mnist_cnn");
  REQUIRE(model.ok());
  (*model)->eval();
  torch::NoGradGuard no_grad;
  const auto x = torch::rand({3, 1, 28, 28});
  auto p = (*model)->named_parameters();
  auto h = torch::conv2d(x, p["conv1.weight"].contiguous(), p["conv1.bias"]).relu();
  h = torch::conv2d(h, p["conv2.weight"].contiguous(), p["conv2.bias"]).relu();
  h = torch::max_pool2d(h, 2).flatten(1);
  h = torch::linear(h, p["fc1.weight"], p["fc1.bias"]).relu();
  const auto expected = torch::linear(h, p["fc2.weight"], p["fc2.bias"]);
  CHECK(torch::allclose((*model)->forward(x), expected, 1e-4, 1e-5));
}

TEST_CASE("fused adam: the multi-tensor path (GPUs, other types) matches torch::optim::Adam") {
  // float64 parameters are not fusable, so they take the _foreach_ path a GPU's parameters take; two
  // of them start one step later, so one step updates two step counts at once.
  for (const double weight_decay : {0.0, 0.01}) {
    CAPTURE(weight_decay);
    torch::manual_seed(8);
    std::vector<torch::Tensor> pa, pb;
    for (const auto& shape : {std::vector<std::int64_t>{5, 3}, {7}, {2, 3, 4}, {1}}) {
      auto t = torch::randn(shape, torch::kFloat64);
      pa.push_back(t.clone().requires_grad_());
      pb.push_back(t.clone().requires_grad_());
    }
    const auto options = torch::optim::AdamOptions(1e-2).weight_decay(weight_decay);
    tw::FusedAdam fused(pa, options);
    torch::optim::Adam stock(pb, options);
    for (int step = 0; step < 4; ++step) {
      fused.zero_grad();
      stock.zero_grad();
      for (auto* ps : {&pa, &pb}) {
        torch::Tensor loss = torch::zeros({}, torch::kFloat64);
        for (std::size_t i = 0; i < ps->size(); ++i) {
          if (step == 0 && i >= 2) continue;  // no gradient yet: no state, no step
          loss = loss + ((*ps)[i] * (*ps)[i]).sum() * static_cast<double>(i + 1) + (*ps)[i].sum();
        }
        loss.backward();
      }
      fused.step();
      stock.step();
    }
    for (std::size_t i = 0; i < pa.size(); ++i) {
      CAPTURE(i);
      CHECK(torch::allclose(pa[i], pb[i], 1e-12, 1e-12));
      CHECK_FALSE(torch::allclose(pa[i], pb[i] + 1e-4, 1e-12, 1e-12));  // the check can fail
    }
  }
}

TEST_CASE("fused adam: matches torch::optim::Adam step for step, with and without weight decay") {
  for (const double weight_decay : {0.0, 0.01}) {
    CAPTURE(weight_decay);
    torch::manual_seed(6);
    auto a = std::make_shared<tw::MnistCnn>();
    auto b = std::make_shared<tw::MnistCnn>();
    {
      torch::NoGradGuard no_grad;
      auto pa = a->parameters();
      auto pb = b->parameters();
      for (std::size_t i = 0; i < pa.size(); ++i) pb[i].copy_(pa[i]);
    }
    const auto options = torch::optim::AdamOptions(1e-3).weight_decay(weight_decay);
    tw::FusedAdam fused(a->parameters(), options);
    torch::optim::Adam stock(b->parameters(), options);
    a->eval();
    b->eval();
    const auto x = torch::rand({8, 1, 28, 28});
    const auto y = torch::randint(0, 10, {8}, torch::kInt64);
    for (int step = 0; step < 3; ++step) {
      fused.zero_grad();
      stock.zero_grad();
      torch::cross_entropy_loss(a->forward(x), y).backward();
      torch::cross_entropy_loss(b->forward(x), y).backward();
      fused.step();
      stock.step();
    }
    auto pa = a->parameters();
    auto pb = b->parameters();
    for (std::size_t i = 0; i < pa.size(); ++i) {
      CAPTURE(i);
      // Elementwise equal to rounding, except where a gradient is near Adam's eps: there g / (|g| + eps) turns a
      // rounding difference in g (the two models' convolutions may pick different kernels for their memory
      // formats) into a visible part of one step. A wrong update rule (bias correction, decay) is off by about
      // the learning rate per step.
      const auto diff = (pa[i] - pb[i]).abs();
      CHECK(diff.max().item<double>() < 0.5 * 1e-3);
      CHECK(diff.mean().item<double>() < 1e-6);
      CHECK(pa[i].is_contiguous(torch::MemoryFormat::ChannelsLast) ==
            pb[i].is_contiguous(torch::MemoryFormat::ChannelsLast));
    }
  }
}
