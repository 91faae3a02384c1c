// The whole tsum-train surface through a real tsumd on the local provider: every model on a data set of its
// format (CIFAR and token data from tsum-train gen-cifar / gen-tokens, uploaded), the eight optimizers in one
// experiment, the inference sweep measured as learn, and workloads the daemon must refuse before anything starts.
#include <doctest/doctest.h>

#include <cstdio>
#include <map>

#include "integration/workload_suite.h"

using namespace tsum;
using namespace tsum::testing;
using nlohmann::json;

namespace {

json experiment(const json& workload) { return workload_experiment(workload, Runtime{}); }

}  // namespace

TEST_CASE("every model trains through the daemon on a data set of its format; t_sum per model") {
  Daemon x;
  check_every_model(x, TSUM_TRAIN_BIN, Runtime{});
}

TEST_CASE("one experiment compares the eight optimizers: a run each, its own workload, grouped by optimizer") {
  Daemon x;
  check_optimizers(x, Runtime{});
}

TEST_CASE("the inference sweep runs as learn: images/s, p50/p99 latency and peak RSS per batch size") {
  Daemon x;
  check_inference_sweep(x, Runtime{});
}

TEST_CASE("workloads the daemon cannot run are 422s naming the field, and nothing starts") {
  Daemon x;
  register_generated(x, TSUM_TRAIN_BIN, "gen-cifar", "cifar-gen", "cifar10-bin", 50);
  auto refused = [&](const json& workload, const std::string& names) {
    auto r = x.d.call("POST", "/v1/experiments", x.admin, experiment(workload).dump());
    INFO(workload.dump() << " -> " << r.body);
    CHECK(r.status == 422);
    CHECK(r.body.find(names) != std::string::npos);
  };
  refused({{"model", "gpt5"}}, "workload.model: 'gpt5' is not a model");
  refused({{"optimizer", "adamw"}}, "workload.optimizer: 'adamw' is not an optimizer");
  refused({{"colour", "red"}}, "unknown field 'workload.colour'");
  refused({{"model", "cifar10_cnn"}, {"dataset", "fashion-mnist"}},
          "workload.dataset: model cifar10_cnn reads format cifar10-bin, but data set 'fashion-mnist' is idx");
  refused({{"model", "mnist_cnn"}, {"dataset", "cifar-gen"}},
          "workload.dataset: model mnist_cnn reads format idx, but data set 'cifar-gen' is cifar10-bin");
  refused({{"dataset", "imagenet"}}, "workload.dataset: there is no data set 'imagenet'");
  refused({{"precision", "fp16"}}, "workload.precision: fp16 runs on cuda only");
  refused({{"device", "cuda"}}, "workload.device: cuda, but 'local' local-1c has no GPU");
  refused({{"image", "tsum-train;reboot"}}, "workload.image: 'tsum-train;reboot' is not an image reference");
  auto runs = x.d.call("GET", "/v1/runs", x.admin).json();
  CHECK(runs["runs"].empty());
}

TEST_CASE("presets: the seeds' experiments filled for the providers here, their runs and worst case before anything "
          "starts; created by name") {
  Daemon x;
  auto before = x.d.call("GET", "/v1/presets", x.admin).json();
  std::map<std::string, json> by_name;
  for (const auto& p : before["presets"]) by_name[p["name"].get<std::string>()] = p;
  REQUIRE(by_name.size() == 3);
  CHECK(by_name["optimizers"]["experiments"].empty());  // no CIFAR data set yet: left out, and said so
  CHECK(by_name["optimizers"]["notes"][0].get<std::string>().find("no cifar10-bin data set") != std::string::npos);
  CHECK(x.d.call("POST", "/v1/presets/optimizers", x.admin, "{}").status == 422);

  register_generated(x, TSUM_TRAIN_BIN, "gen-cifar", "cifar-gen", "cifar10-bin", 50);
  auto after = x.d.call("GET", "/v1/presets", x.admin).json();
  for (const auto& p : after["presets"]) by_name[p["name"].get<std::string>()] = p;
  const json opt = by_name["optimizers"];
  REQUIRE(opt["experiments"].size() == 1);
  CHECK(opt["experiments"][0]["workload"]["dataset"] == "cifar-gen");
  CHECK(opt["runs"] == 8 * 3);  // 8 optimizers, 3 repetitions, on one machine
  // Its worst case: every run billed to its deadline at the machine's price (per hour: whole hours).
  const std::string type = opt["experiments"][0]["configs"][0]["instance_type"];
  double price = 0;
  const json offers = x.d.call("GET", "/v1/offers", x.admin).json();
  for (const auto& o : offers["offers"])
    if (o["instance_type"] == type) price = o["hourly_price"];
  REQUIRE(price > 0);
  CHECK(opt["worst_case"]["per_hour"].get<double>() == doctest::Approx(24 * price * 2));  // 7200 s deadlines
  CHECK(by_name["cpu-vs-gpu"]["experiments"].size() == 2);  // MNIST and CIFAR-10 now
  CHECK(by_name["inference"]["experiments"][0]["workload"]["kind"] == "infer");

  CHECK(x.d.call("POST", "/v1/presets/nope", x.admin, "{}").status == 404);
  auto created = x.d.call("POST", "/v1/presets/optimizers", x.admin, "{}");
  INFO(created.body);
  REQUIRE(created.status == 201);
  const int64_t id = created.json()["ids"][0].get<int64_t>();
  auto exp = x.d.call("GET", "/v1/experiments/" + std::to_string(id), x.admin).json();
  CHECK(exp["runs"].size() == 24);
  CHECK(x.d.call("DELETE", "/v1/experiments/" + std::to_string(id), x.admin).status == 202);

  // The command line shows the same.
  const std::string cli = std::string(TSUMD_BIN) + " preset list --url http://127.0.0.1:" + std::to_string(x.d.port()) +
                          " --token " + x.admin;
  FILE* p = popen(cli.c_str(), "r");
  REQUIRE(p);
  std::string out;
  char buf[512];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  CHECK(pclose(p) == 0);
  CHECK(out.find("optimizers: the CIFAR-10 CNN with each of the 8 optimizers") != std::string::npos);
  CHECK(out.find("24 runs, worst case") != std::string::npos);
}

TEST_CASE("a host with GPUs offers local-<N>c-<G>g; a run there has its own GPU, and its phases carry its statistics") {
  // The stand-in NVML (tests/workload/fake_nvml.c: "Fake H100 A" at 30 % and 1 GiB, "Fake H100 B" at 70 % and 3 GiB)
  // is what the daemon finds this host's GPUs through, and what the agent's tsum-gpustat samples.
  setenv("TSUM_NVML_LIBRARY", FAKE_NVML_LIB, 1);
  Daemon x;
  unsetenv("TSUM_NVML_LIBRARY");
  std::map<std::string, json> local;
  const json offers = x.d.call("GET", "/v1/offers", x.admin).json();
  for (const auto& o : offers["offers"])
    if (o["provider"] == "local") local[o["instance_type"].get<std::string>()] = o;
  REQUIRE(local.count("local-1c"));
  REQUIRE(local.count("local-1c-1g"));
  REQUIRE(local.count("local-1c-2g"));
  CHECK(local["local-1c"]["gpus"] == 0);
  CHECK(local["local-1c-2g"]["gpus"] == 2);
  CHECK(local["local-1c-1g"]["gpu_type"] == "Fake H100 A");
  CHECK(local["local-1c-1g"]["hourly_price"] == local["local-1c"]["hourly_price"]);  // the GPU is not priced ...
  CHECK(local["local-1c-1g"]["note"].get<std::string>().find("GPUs not priced") != std::string::npos);  // ... and says so

  // This machine has no CUDA, so the runs train on the CPU ("device": "cpu"); what differs is the GPUs they hold.
  const json body = {{"name", "gpu host"},
                     {"workload", {{"limit", 300}, {"test_limit", 200}, {"device", "cpu"}}},
                     {"repetitions", 1},
                     {"billing", {"per_second_60s_min"}},
                     {"configs", {{{"provider", "local"}, {"instance_type", "local-1c-1g"}},
                                  {{"provider", "local"}, {"instance_type", "local-1c"}}}}};
  const auto exp = wait_experiment(x.d, x.admin, submit_experiment(x.d, x.admin, body), std::chrono::seconds(300));
  REQUIRE(exp["runs"].size() == 2);
  for (const auto& row : exp["runs"]) {  // the run's own view holds its statistics
    const json run = x.d.call("GET", "/v1/runs/" + std::to_string(row["id"].get<int64_t>()), x.admin).json();
    CAPTURE(run["config"]["instance_type"]);
    REQUIRE(run["status"] == "done");
    const json learn = run["stats"]["learn"];
    if (run["config"]["instance_type"] == "local-1c-1g") {
      // GPU 0 alone (CUDA_VISIBLE_DEVICES=0), not the host's mean of 50 % and 4 GiB.
      CHECK(learn["gpu_util_pct"]["avg"].get<double>() == doctest::Approx(30.0));
      CHECK(learn["gpu_mem_bytes"]["max"].get<double>() == doctest::Approx(double(1ULL << 30)));
      // install found the GPU part way through: its GPU average is over the samples that had one.
      CHECK(run["stats"]["install"]["gpu_util_pct"]["avg"].get<double>() == doctest::Approx(30.0));
      // The install probe ran and failed (no CUDA here): logged, and the install mark has no gpu_probe.
      CHECK_FALSE(run["metrics"]["install"].contains("gpu_probe"));
    } else {
      CHECK_FALSE(learn.contains("gpu_util_pct"));  // a CPU instance sees none of the host's GPUs
    }
  }
}
