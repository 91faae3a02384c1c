// Optimizers by name, the Keras-style Nadam and Adadelta against hand computation, and Keras-style
// learning-rate decay in the trainer.
#include "doctest_torch.h"

#include <cmath>

#include "workload/optim/adadelta.h"
#include "workload/models/model_registry.h"
#include "workload/optim/nadam.h"
#include "workload/optim/optimizer_registry.h"
#include "workload/train/trainer.h"

namespace tw = tsum::workload;

namespace {

// A 2-element float64 parameter and its gradients for two steps.
const std::vector<double> kStart = {0.5, -1.5};
const std::vector<std::vector<double>> kGrads = {{0.2, -0.4}, {-0.1, 0.3}};

torch::Tensor parameter() { return torch::tensor(kStart, torch::kFloat64).requires_grad_(true); }

// Runs two steps of `opt` over `p` with kGrads.
void two_steps(torch::optim::Optimizer& opt, torch::Tensor& p) {
  for (const auto& g : kGrads) {
    p.mutable_grad() = torch::tensor(g, torch::kFloat64);
    opt.step();
  }
}

}  // namespace

TEST_CASE("nadam: two steps equal Keras's formula computed by hand") {
  const double lr = 0.002, beta1 = 0.9, beta2 = 0.999, eps = 1e-7, decay = 0.004;
  torch::Tensor p = parameter();
  tw::Nadam nadam({p}, tw::NadamOptions(lr));
  two_steps(nadam, p);

  for (std::size_t i = 0; i < kStart.size(); ++i) {
    CAPTURE(i);
    // keras.optimizers.Nadam.get_updates, line by line, with m_schedule starting at 1.
    double x = kStart[i], m = 0, v = 0, m_schedule = 1;
    for (int t = 1; t <= 2; ++t) {
      const double g = kGrads[static_cast<std::size_t>(t - 1)][i];
      const double momentum_cache_t = beta1 * (1 - 0.5 * std::pow(0.96, t * decay));
      const double momentum_cache_t_1 = beta1 * (1 - 0.5 * std::pow(0.96, (t + 1) * decay));
      const double m_schedule_new = m_schedule * momentum_cache_t;
      const double m_schedule_next = m_schedule * momentum_cache_t * momentum_cache_t_1;
      m_schedule = m_schedule_new;
      const double g_prime = g / (1 - m_schedule_new);
      m = beta1 * m + (1 - beta1) * g;
      const double m_t_prime = m / (1 - m_schedule_next);
      v = beta2 * v + (1 - beta2) * g * g;
      const double v_t_prime = v / (1 - std::pow(beta2, t));
      const double m_t_bar = (1 - momentum_cache_t) * g_prime + momentum_cache_t_1 * m_t_prime;
      x = x - lr * m_t_bar / (std::sqrt(v_t_prime) + eps);
    }
    CHECK(std::abs(p[static_cast<std::int64_t>(i)].item<double>() - x) < 1e-6);
    CHECK(std::abs(x - kStart[i]) > 1e-4);  // the steps moved the parameter
  }
  // Spot value for element 0 at t=1, worked out separately: mu_1 = 0.9*(1-0.5*0.96^0.004) =
  // 0.4500735, mu_2 = 0.4501469; g' = 0.2/(1-mu_1) = 0.3636849; m = 0.02; m' = 0.02/(1-mu_1*mu_2)
  // = 0.0250815; v' = 0.04; m_bar = (1-mu_1)*g' + mu_2*m' = 0.2 + 0.0112904 = 0.2112904;
  // x = 0.5 - 0.002 * 0.2112904 / (0.2 + 1e-7) = 0.4978871.
  torch::Tensor q = parameter();
  tw::Nadam one({q}, tw::NadamOptions(lr));
  q.mutable_grad() = torch::tensor(kGrads[0], torch::kFloat64);
  one.step();
  CHECK(std::abs(q[0].item<double>() - 0.4978871) < 1e-6);
}

TEST_CASE("adadelta: two steps equal Keras's formula computed by hand") {
  const double lr = 1.0, rho = 0.95, eps = 1e-7;
  torch::Tensor p = parameter();
  tw::Adadelta adadelta({p}, tw::AdadeltaOptions(lr));
  two_steps(adadelta, p);
  for (std::size_t i = 0; i < kStart.size(); ++i) {
    CAPTURE(i);
    double x = kStart[i], a = 0, d = 0;
    for (const auto& grads : kGrads) {
      const double g = grads[i];
      a = rho * a + (1 - rho) * g * g;
      const double update = g * std::sqrt(d + eps) / std::sqrt(a + eps);
      x = x - lr * update;
      d = rho * d + (1 - rho) * update * update;
    }
    CHECK(std::abs(p[static_cast<std::int64_t>(i)].item<double>() - x) < 1e-9);
  }
}

TEST_CASE("optimizers: every name builds, with Keras's default learning rates") {
  const std::vector<std::pair<const char*, double>> expected = {
      {"sgd", 0.01},   {"momentum", 0.01}, {"nesterov", 0.01}, {"rmsprop", 0.001},
      {"adam", 0.001}, {"adagrad", 0.01},  {"adadelta", 1.0},  {"nadam", 0.002}};
  for (const auto& [name, lr] : expected) {
    CAPTURE(name);
    auto default_lr = tw::default_learning_rate(name);
    REQUIRE(default_lr.ok());
    CHECK(*default_lr == doctest::Approx(lr));
    torch::Tensor p = parameter();
    auto opt = tw::make_optimizer(name, {p}, 0.05);
    REQUIRE(opt.ok());
    CHECK((*opt)->param_groups()[0].options().get_lr() == doctest::Approx(0.05));
    two_steps(**opt, p);
    CHECK_FALSE(torch::equal(p, parameter()));
  }
  CHECK(tw::default_learning_rate("adamax").code() == tsum::Code::invalid_argument);
  CHECK(tw::optimizer_names() ==
        "sgd, momentum, nesterov, rmsprop, adam, adagrad, adadelta, nadam");
}

TEST_CASE("optimizers: momentum and nesterov are SGD with momentum 0.9; rmsprop uses rho 0.9") {
  auto options_of = [](const char* name) {
    torch::Tensor p = parameter();
    auto opt = tw::make_optimizer(name, {p}, 0.1);
    REQUIRE(opt.ok());
    return (*opt)->param_groups()[0].options().clone();
  };
  const auto momentum = options_of("momentum");
  const auto& m = static_cast<const torch::optim::SGDOptions&>(*momentum);
  CHECK(m.momentum() == doctest::Approx(0.9));
  CHECK_FALSE(m.nesterov());
  const auto nesterov = options_of("nesterov");
  CHECK(static_cast<const torch::optim::SGDOptions&>(*nesterov).nesterov());
  const auto rmsprop = options_of("rmsprop");
  const auto& r = static_cast<const torch::optim::RMSpropOptions&>(*rmsprop);
  CHECK(r.alpha() == doctest::Approx(0.9));
  CHECK(r.eps() == doctest::Approx(1e-7));
}

TEST_CASE("trainer: Keras-style decay runs step t with lr / (1 + decay * t)") {
  torch::manual_seed(4);
  auto model = tw::make_model("cifar_small");
  REQUIRE(model.ok());
  auto opt = tw::make_optimizer("sgd", (*model)->parameters(), 0.1);
  REQUIRE(opt.ok());
  torch::optim::Optimizer* raw = opt->get();
  tw::Trainer trainer(*model, std::move(*opt), {8, 0.5, false});
  const auto x = torch::rand({8, 3, 32, 32});
  const auto y = torch::randint(0, 10, {8}, torch::kInt64);
  for (int t = 0; t < 4; ++t) {
    REQUIRE(trainer.train_step(x, y).ok());
    CHECK(raw->param_groups()[0].options().get_lr() == doctest::Approx(0.1 / (1 + 0.5 * t)));
  }
  CHECK(trainer.steps() == 4);

  // Without decay the learning rate stays put.
  auto plain = tw::make_optimizer("sgd", (*model)->parameters(), 0.1);
  REQUIRE(plain.ok());
  raw = plain->get();
  tw::Trainer steady(*model, std::move(*plain), {8, 0.0, false});
  REQUIRE(steady.train_step(x, y).ok());
  REQUIRE(steady.train_step(x, y).ok());
  CHECK(raw->param_groups()[0].options().get_lr() == doctest::Approx(0.1));
}

TEST_CASE("trainer: a shape mismatch is an internal error, not a crash") {
  auto model = tw::make_model("mnist_mlp");
  REQUIRE(model.ok());
  auto opt = tw::make_optimizer("adam", (*model)->parameters(), 1e-3);
  REQUIRE(opt.ok());
  tw::Trainer trainer(*model, std::move(*opt), {4, 0.0, false});
  auto r = trainer.train_step(torch::rand({4, 3, 32, 32}), torch::zeros({4}, torch::kInt64));
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == tsum::Code::internal);
}
