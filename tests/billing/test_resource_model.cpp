#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "billing/plan_csv.h"
#include "billing/model/predictor.h"
#include "billing/model/resource_model.h"

using namespace tsum::billing;

namespace {

// A machine of `family` with `cores` vCPUs and `gib_per_core` GiB of memory per vCPU, `nodes` of them.
ConfigSpec machine(const std::string& family, int cores, double gib_per_core, int nodes = 1) {
  ConfigSpec c;
  c.config = std::to_string(nodes) + "x" + family + "-" + std::to_string(cores);
  c.provider = "aws";
  c.instance_type = family + "-" + std::to_string(cores);
  c.cpu_family = family;
  c.cores = cores;
  c.memory_gib = gib_per_core * cores;
  c.nodes = nodes;
  return c;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double predicted_median(const ResourceModel& m, const ConfigSpec& c) {
  std::mt19937_64 rng(7);
  return median(m.sample(c, 2000, rng));
}

}  // namespace

TEST_CASE("instance families are read from instance type names") {
  CHECK(instance_family("c4.large") == "c4");
  CHECK(instance_family("n2-standard-8") == "n2");
  CHECK(instance_family("Standard_D4s_v5") == "Standard_D");
  CHECK(instance_family("cx22") == "cx");
  CHECK(instance_family("local-2c") == "local");
  CHECK(instance_family("4xr3.2xlarge") == "r3");  // a recorded cluster of 4 r3.2xlarge
  CHECK(instance_family("12xm4.large") == "m4");
  CHECK(instance_family("x1.16xlarge") == "x1");   // no count: a family that begins with x
  CHECK(instance_family("2x") == "2x");            // no machine after the count: the name as it is
  CHECK(instance_family("") == "");
}

TEST_CASE("the resource model reaches across families, and says it reached further") {
  // c4 measured at 3 sizes: an Amdahl job, learn = 100 + 8000 / cores.
  std::vector<ResourcePoint> pts;
  for (int n : {4, 8, 16}) pts.push_back({machine("c4", n, 1.875), 100 + 8000.0 / n});
  auto m = ResourceModel::fit(pts, {});
  REQUIRE(m.ok());
  const auto same = machine("c4", 12, 1.875);
  const auto other = machine("r4", 12, 7.625);
  CHECK(m->family_measured(same));
  CHECK_FALSE(m->family_measured(other));
  // Inside the measured range, its own family predicts close to the truth (767 s).
  CHECK(predicted_median(*m, same) == doctest::Approx(100 + 8000.0 / 12).epsilon(0.15));
  // A family with no run is predicted (memory never hurts, so not slower than c4 by much), but less surely.
  CHECK(predicted_median(*m, other) < 1.3 * predicted_median(*m, same));
  CHECK(m->log_sd(other) > m->log_sd(same));
  CHECK(m->effective_particles() > 1);
}

TEST_CASE("a memory cliff measured in one family predicts another family past it") {
  // c4: 2 GiB per vCPU. Compute part 10000 / C, 8x slower while the job's 100 GiB do not fit in memory.
  std::vector<ResourcePoint> pts;
  for (int n : {8, 16, 32, 64, 128}) {
    const auto c = machine("c4", n, 2.0);
    pts.push_back({c, 10000.0 / n * (c.memory_gib < 100 ? 8 : 1)});
  }
  auto m = ResourceModel::fit(pts, {.memory_lo_gib = 8, .memory_hi_gib = 512});
  REQUIRE(m.ok());
  const double cramped = predicted_median(*m, machine("c4", 8, 2.0));   // measured: 10000 s
  const double roomy = predicted_median(*m, machine("r4", 8, 16.0));    // same cores, 128 GiB: about 1250 s
  CHECK(cramped == doctest::Approx(10000).epsilon(0.2));
  CHECK(roomy < 0.3 * cramped);
  // The same holds for nodes: 4 c4 machines of 8 vCPUs have 64 GiB, 16 of them 256 GiB; 4x the cores alone
  // would make them at most 4x faster.
  CHECK(predicted_median(*m, machine("c4", 8, 2.0, 16)) < 0.1 * predicted_median(*m, machine("c4", 8, 2.0, 4)));
}

TEST_CASE("the predictor uses the resource model when the runs describe memory, and says so") {
  auto run = [](const ConfigSpec& c, double learn) {
    MeasuredRun r;
    r.cfg = c;
    r.phases = {30, 20, 10, 5, learn, 5, 5, 10};
    return r;
  };
  std::vector<MeasuredRun> h = {run(machine("c4", 4, 1.875), 2100), run(machine("c4", 16, 1.875), 600)};
  auto p = Predictor::learn(h, {});
  REQUIRE(p.ok());
  auto fam = p->predict(machine("c4", 8, 1.875));
  auto cross = p->predict(machine("m4", 8, 4.0));
  REQUIRE(fam.ok());
  REQUIRE(cross.ok());
  CHECK(fam->basis == "family");
  CHECK(cross->basis == "cross-family");
  CHECK(cross->log_sd > fam->log_sd);
  CHECK(p->predict(machine("c4", 4, 1.875))->basis == "measured");

  // Without memory, or asked to, the per-family curves as before: no run of m4, nothing predicts it.
  PredictorOptions family_only;
  family_only.model = LearnModel::family;
  auto q = Predictor::learn(h, {}, family_only);
  REQUIRE(q.ok());
  CHECK(q->predict(machine("c4", 8, 1.875))->basis == "sparse");
  CHECK(q->predict(machine("m4", 8, 4.0)).error().code == tsum::Code::not_found);

  // A failed run is no measurement: its config is still predicted by the model, not as measured, and no slower
  // than the seconds it ran before it stopped.
  MeasuredRun stopped = run(machine("c4", 8, 1.875), 4000);
  stopped.failed = true;
  h.push_back(stopped);
  auto r = Predictor::learn(h, {});
  REQUIRE(r.ok());
  auto bounded = r->predict(machine("c4", 8, 1.875));
  REQUIRE(bounded.ok());
  CHECK(bounded->basis == "family");
  CHECK(bounded->runs == 0);
  CHECK(bounded->mean(kLearn) > 2 * fam->mean(kLearn));
}

TEST_CASE("the runs CSV describes the machine: family, memory, nodes, CPU model") {
  const std::string csv =
      "config,provider,instance_type,cores,gpus,price_per_hour,startup,install,load_data,start,learn,verify,save,"
      "poweroff,family,memory_gib,nodes,cpu_model\n"
      "8xc4.large,aws,c4.large,2,0,0.8,60,45,30,10,935.7,0,10,10,c4,3.75,8,Intel Xeon E5-2666 v3\n";
  auto rows = parse_runs_csv(csv);
  REQUIRE(rows.ok());
  const auto& c = (*rows)[0].run.cfg;
  CHECK(c.cpu_family == "c4");
  CHECK(c.memory_gib == 3.75);
  CHECK(c.nodes == 8);
  CHECK(c.cpu_model == "Intel Xeon E5-2666 v3");

  auto bad_nodes = parse_runs_csv(
      "config,provider,instance_type,cores,gpus,price_per_hour,startup,install,load_data,start,learn,verify,save,"
      "poweroff,nodes\nx,aws,c4.large,2,0,0.1,1,1,1,1,1,1,1,1,0\n");
  REQUIRE_FALSE(bad_nodes.ok());
  CHECK(bad_nodes.error().detail.find("nodes") != std::string::npos);
  auto clash = parse_runs_csv(
      "config,provider,instance_type,cores,gpus,price_per_hour,startup,install,load_data,start,learn,verify,save,"
      "poweroff,family,cpu_family\nx,aws,c4.large,2,0,0.1,1,1,1,1,1,1,1,1,c4,m4\n");
  REQUIRE_FALSE(clash.ok());
  CHECK(clash.error().detail.find("disagree") != std::string::npos);
  // Rows of one config must agree on the machine.
  auto differ = parse_runs_csv(
      "config,provider,instance_type,cores,gpus,price_per_hour,startup,install,load_data,start,learn,verify,save,"
      "poweroff,memory_gib\nx,aws,c4.large,2,0,0.1,1,1,1,1,1,1,1,1,3.75\nx,aws,c4.large,2,0,0.1,1,1,1,1,1,1,1,1,8\n");
  REQUIRE_FALSE(differ.ok());
  CHECK(differ.error().detail.find("line 3") != std::string::npos);
}

TEST_CASE("a run that filled its machine's memory puts the job's working set above it; one that used little, below") {
  // Two small configs of one family measured, Amdahl-like; a config with 8x their memory is predicted. The prior's
  // memory range is the one a search gives these three configs (8-128 GiB, widened by 1.5 either way).
  ResourceOptions opt;
  opt.memory_lo_gib = 8 / 1.5, opt.memory_hi_gib = 128 * 1.5;
  const ConfigSpec small = machine("m", 4, 2), wider = machine("m", 8, 2), large = machine("m", 8, 2, 8);
  std::vector<ResourcePoint> unsampled = {{small, 1000}, {wider, 520}};
  auto blind = ResourceModel::fit(unsampled, opt);
  REQUIRE(blind.ok());
  auto bound = unsampled, fits = unsampled;
  for (auto& p : bound) p.memory_used = 0.97;  // both swapped against their memory
  for (auto& p : fits) p.memory_used = 0.2;
  auto starved = ResourceModel::fit(bound, opt);
  auto roomy = ResourceModel::fit(fits, opt);
  REQUIRE(starved.ok());
  REQUIRE(roomy.ok());
  // Past a working set the measured configs did not hold, the large config runs far faster than their curve says.
  const double without = predicted_median(*blind, large);
  CHECK(predicted_median(*starved, large) < 0.8 * without);
  // Where the job fit in 8 GiB, more memory buys nothing beyond the cores.
  CHECK(predicted_median(*roomy, large) >= 0.95 * without);
  // The measured configs themselves are predicted as measured either way.
  CHECK(predicted_median(*starved, small) == doctest::Approx(1000).epsilon(0.15));
}

TEST_CASE("a run that did not finish bounds its config's learn time from below, and the configs like it") {
  // A memory-rich config measured at 1000 s; one with a quarter of its memory per core, of another family, ran
  // 3000 s and was stopped: a working set between their memories is the model's only way to explain that.
  ResourceOptions opt;
  opt.memory_lo_gib = 4, opt.memory_hi_gib = 1024;
  const ConfigSpec rich = machine("r", 8, 4), lean = machine("c", 8, 1), lean_wide = machine("c", 16, 1),
                   rich_wide = machine("r", 16, 4);
  std::vector<ResourcePoint> finished = {{rich, 1000}};
  auto before = ResourceModel::fit(finished, opt);
  REQUIRE(before.ok());
  auto stopped = finished;
  stopped.push_back({lean, 3000, std::nullopt, true});
  auto after = ResourceModel::fit(stopped, opt);
  REQUIRE(after.ok());
  CHECK(predicted_median(*before, lean) < 2000);
  // Its own prediction moves past the seconds it ran, and its family's larger size, below the same working set
  // in most worlds left, moves with it; the memory-rich family's does not.
  CHECK(predicted_median(*after, lean) > 3000);
  CHECK(predicted_median(*after, lean_wide) > 1.5 * predicted_median(*before, lean_wide));
  CHECK(predicted_median(*after, rich_wide) == doctest::Approx(predicted_median(*before, rich_wide)).epsilon(0.2));
  // The finished run is still predicted as measured.
  CHECK(predicted_median(*after, rich) == doctest::Approx(1000).epsilon(0.15));
  // A model needs one finished run: bounds alone are refused.
  std::vector<ResourcePoint> only_bounds = {{lean, 3000, std::nullopt, true}};
  CHECK_FALSE(ResourceModel::fit(only_bounds, opt).ok());
}
