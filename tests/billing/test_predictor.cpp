#include <doctest/doctest.h>

#include <cmath>

#include "billing/model/phase_priors.h"
#include "billing/model/predictor.h"

using namespace tsum::billing;

namespace {

ConfigSpec cpu(const std::string& provider, int cores, const std::string& family = "icelake") {
  ConfigSpec c;
  c.config = provider + "-" + std::to_string(cores) + "c";
  c.provider = provider;
  c.instance_type = c.config;
  c.cores = cores;
  c.cpu_family = family;
  return c;
}

MeasuredRun measured(const ConfigSpec& c, double learn, double startup = 30, double install = 60) {
  MeasuredRun r;
  r.cfg = c;
  r.phases = {startup, install, 10, 5, learn, learn * 0.05, 4, 20};
  return r;
}

}  // namespace

TEST_CASE("a config with its own runs is predicted from them") {
  auto c = cpu("aws", 4);
  std::vector<MeasuredRun> h = {measured(c, 1000), measured(c, 1040), measured(c, 960)};
  auto p = Predictor::learn(h, {});
  REQUIRE(p.ok());
  auto pred = p->predict(c);
  REQUIRE(pred.ok());
  CHECK(pred->basis == "measured");
  CHECK(pred->runs == 3);
  CHECK(pred->overhead_basis == "measured");
  CHECK(pred->mean(kLearn) == doctest::Approx(1000).epsilon(0.01));
  CHECK(pred->mean(kStartup) == doctest::Approx(30).epsilon(0.02));
  CHECK(pred->t_mean() == doctest::Approx(30 + 60 + 10 + 5 + 1000 + 50 + 4 + 20).epsilon(0.01));
  CHECK(pred->t_sum.size() == 2520);
}

TEST_CASE("a probe of a few hundred steps predicts the full learn phase") {
  auto c = cpu("aws", 8);
  Workload w{10, 60000};  // 10 epochs of 60k images
  MeasuredRun probe = measured(c, 30);  // 30 s for 12k images = 2% of the workload
  probe.images_done = 12000;
  auto p = Predictor::learn(std::vector{probe}, w);
  REQUIRE(p.ok());
  auto pred = p->predict(c);
  REQUIRE(pred.ok());
  CHECK(pred->mean(kLearn) == doctest::Approx(1500).epsilon(0.01));
  CHECK(pred->epoch_s == doctest::Approx(150).epsilon(0.01));
  // verify and save of a probe are not measurements; verify falls back to a fraction of an epoch.
  CHECK(pred->mean(kVerify) == doctest::Approx(kVerifyPerEpoch * 150).epsilon(0.02));

  MeasuredRun by_epoch = measured(c, 300);
  by_epoch.epochs_done = 2;
  auto q = Predictor::learn(std::vector{by_epoch}, w);
  REQUIRE(q.ok());
  CHECK(q->predict(c)->mean(kLearn) == doctest::Approx(1500).epsilon(0.01));
}

TEST_CASE("a probe's steady throughput keeps its warm-up from being scaled up") {
  auto c = cpu("aws", 8);
  Workload w{1, 100000};
  MeasuredRun probe = measured(c, 20 + 0.01 * 3000);  // 20 s warm-up, then 10 ms per image for 3000 images
  probe.images_done = 3000;
  probe.steady_images_per_s = 100;
  auto p = Predictor::learn(std::vector{probe}, w);
  REQUIRE(p.ok());
  CHECK(p->predict(c)->mean(kLearn) == doctest::Approx(20 + 0.01 * 100000).epsilon(0.01));
  probe.steady_images_per_s.reset();  // without it the warm-up is multiplied by 100000 / 3000
  auto q = Predictor::learn(std::vector{probe}, w);
  CHECK(q->predict(c)->mean(kLearn) == doctest::Approx(50.0 * 100000 / 3000).epsilon(0.01));
}

TEST_CASE("three or more full runs are used as they are, phases together") {
  auto c = cpu("aws", 4);
  std::vector<MeasuredRun> h = {measured(c, 1000, 30), measured(c, 1100, 40), measured(c, 1200, 50)};
  auto p = Predictor::learn(h, {});
  REQUIRE(p.ok());
  auto pred = p->predict(c);
  REQUIRE(pred.ok());
  REQUIRE(pred->t_sum.size() % 3 == 0);
  for (size_t i = 0; i < pred->t_sum.size(); ++i) {
    const auto& r = h[i % 3];
    CHECK(pred->phases[kLearn][i] == r.phases[kLearn]);
    CHECK(pred->phases[kStartup][i] == r.phases[kStartup]);
    CHECK(pred->t_sum[i] == doctest::Approx(t_sum_of(r.phases)));
  }
  CHECK(pred->mean(kLearn) == doctest::Approx(1100));
}

TEST_CASE("probes at two sizes separate a fixed warm-up from the per-image time") {
  auto c = cpu("aws", 8);
  Workload w{1, 100000};
  MeasuredRun a = measured(c, 20 + 0.01 * 5000);   // 20 s warm-up, 10 ms per image
  a.images_done = 5000;
  MeasuredRun b = measured(c, 20 + 0.01 * 20000);
  b.images_done = 20000;
  auto p = Predictor::learn(std::vector{a, b}, w);
  REQUIRE(p.ok());
  CHECK(p->predict(c)->mean(kLearn) == doctest::Approx(20 + 0.01 * 100000).epsilon(0.01));
}

TEST_CASE("an unmeasured core count comes from its family's Ernest curve") {
  std::vector<MeasuredRun> h;
  auto t = [](double n) { return 50 + 4000 / n + 2 * n; };
  for (int n : {1, 2, 4, 16}) h.push_back(measured(cpu("aws", n), t(n)));
  auto p = Predictor::learn(h, {});
  REQUIRE(p.ok());
  auto eight = p->predict(cpu("aws", 8));
  REQUIRE(eight.ok());
  CHECK(eight->basis == "fitted");
  CHECK(eight->mean(kLearn) == doctest::Approx(t(8)).epsilon(0.03));
  CHECK(eight->overhead_basis == "provider");  // aws-8c itself never ran; other aws types did
  auto big = p->predict(cpu("aws", 64));
  REQUIRE(big.ok());
  CHECK(big->basis == "extrapolated");
  // Another family knows nothing from these runs.
  auto other = p->predict(cpu("aws", 8, "graviton"));
  REQUIRE_FALSE(other.ok());
  CHECK(other.error().code == tsum::Code::not_found);
}

TEST_CASE("multi-node configs are fitted over every worker: nodes times cores, as Ernest fits over machines") {
  std::vector<MeasuredRun> h;
  auto t = [](double n) { return 30 + 2000 / n + 8 * std::log(n) + 1.5 * n; };
  auto nodes = [](ConfigSpec c, int n) {
    c.config += "/x" + std::to_string(n);
    c.nodes = n;
    return c;
  };
  for (int n : {1, 2, 8}) h.push_back(measured(nodes(cpu("aws", 4), n), t(4.0 * n)));
  h.push_back(measured(cpu("aws", 2), t(2)));
  auto p = Predictor::learn(h, {});
  REQUIRE(p.ok());
  CHECK(Predictor::count_of(nodes(cpu("aws", 4), 4)) == 16);
  auto four = p->predict(nodes(cpu("aws", 4), 4));  // never measured: 16 workers on the curve
  REQUIRE(four.ok());
  CHECK(four->basis == "fitted");
  CHECK(four->mean(kLearn) == doctest::Approx(t(16)).epsilon(0.05));
}

TEST_CASE("GPU configs scale over GPU count within a GPU type") {
  auto g = [](int k) {
    ConfigSpec c;
    c.config = "p3-" + std::to_string(k);
    c.provider = "aws";
    c.instance_type = c.config;
    c.cores = 8 * k;
    c.gpus = k;
    c.gpu_type = "V100";
    return c;
  };
  std::vector<MeasuredRun> h = {measured(g(1), 400), measured(g(2), 220), measured(g(8), 80)};
  auto p = Predictor::learn(h, {});
  REQUIRE(p.ok());
  auto four = p->predict(g(4));
  REQUIRE(four.ok());
  CHECK(four->basis == "fitted");
  CHECK(four->mean(kLearn) < 220);
  CHECK(four->mean(kLearn) > 80);
  CHECK(Predictor::group_of(g(4)) == "gpu:V100");
}

TEST_CASE("overheads fall back to the provider's prior when nothing was measured there") {
  std::vector<MeasuredRun> h = {measured(cpu("aws", 4), 1000)};
  auto p = Predictor::learn(h, {});
  REQUIRE(p.ok());
  auto hz = cpu("hetzner", 4);  // same family, so learn is predictable
  auto pred = p->predict(hz);
  REQUIRE(pred.ok());
  CHECK(pred->overhead_basis == "prior");
  CHECK(pred->mean(kStartup) == doctest::Approx(phase_prior("hetzner").startup).epsilon(0.1));
  hz.image_cached = true;
  CHECK(p->predict(hz)->mean(kInstall) == doctest::Approx(phase_prior("hetzner").install_cached).epsilon(0.1));
  CHECK(phase_prior("no-such-cloud").provider == "default");
}

TEST_CASE("bad runs are refused") {
  auto bad = measured(cpu("aws", 4), -1);
  CHECK_FALSE(Predictor::learn(std::vector{bad}, {}).ok());
  auto partial = measured(cpu("aws", 4), 10);
  partial.images_done = 100;  // but the workload does not say how many images an epoch has
  CHECK_FALSE(Predictor::learn(std::vector{partial}, {}).ok());
  PredictorOptions none;
  none.samples = 0;
  CHECK_FALSE(Predictor::learn(std::vector{measured(cpu("aws", 4), 10)}, {}, none).ok());
}

TEST_CASE("predictions are repeatable") {
  std::vector<MeasuredRun> h = {measured(cpu("aws", 2), 2000), measured(cpu("aws", 8), 600)};
  auto a = Predictor::learn(h, {});
  auto b = Predictor::learn(h, {});
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->predict(cpu("aws", 4))->t_sum == b->predict(cpu("aws", 4))->t_sum);
}
