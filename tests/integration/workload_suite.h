// The tsum-train surface through a real tsumd on the local provider, shared by the native suite
// (test_workloads.cpp) and the Docker one (tests/docker/test_local_docker.cpp): a `Runtime` says how the runs
// run (no image: natively from the trainer bundle; an image: in a container of it, pulled in install).
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>
#include <set>
#include <string>
#include <vector>

#include "daemon/artifacts/tar_archive.h"
#include "integration/daemon_process.h"

namespace tsum::testing {

struct Runtime {
  std::string image;  // empty: native
};

// Makes a data set with `TRAINER GEN DIR --n N`, packs it and registers it as NAME of FORMAT.
inline void register_generated(const Daemon& x, const std::string& trainer, const std::string& gen,
                               const std::string& name, const std::string& format, int n) {
  const std::string out = x.dir.file(name);
  const std::string cmd = trainer + " " + gen + " " + out + " --n " + std::to_string(n) + " >/dev/null";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(out)) files.push_back(e.path().string());
  REQUIRE(daemon::write_tar_gz(out + ".tar.gz", files).ok());
  std::ifstream in(out + ".tar.gz", std::ios::binary);
  const std::string body{std::istreambuf_iterator<char>(in), {}};
  auto r = api::http_call("127.0.0.1", x.d.port(), "POST", "/v1/datasets?name=" + name + "&format=" + format, body,
                          {{"Authorization", "Bearer " + x.admin}, {"Content-Type", "application/gzip"}});
  INFO(r.body);
  REQUIRE(r.status == 201);
}

// One config on the local provider, `cores` cores, in the runtime rt.
inline nlohmann::json workload_experiment(nlohmann::json workload, const Runtime& rt, int cores = 1) {
  nlohmann::json config = {{"provider", "local"}, {"cores", cores}};
  if (!rt.image.empty()) {
    workload["image"] = rt.image;
    config["runtime"] = "docker";
  }
  return {{"name", "workloads"}, {"workload", workload}, {"repetitions", 1}, {"billing", {"per_second_60s_min"}},
          {"configs", {config}}};
}

// Checks the install mark says how the run got its trainer: natively the bundle, downloaded by the first run and
// linked from the machine's cache by the rest; the image in Docker.
inline void check_install(const nlohmann::json& run, const Runtime& rt) {
  const nlohmann::json install = run["metrics"]["install"];
  if (rt.image.empty()) {
    CHECK((install["method"] == "bundle" || install["method"] == "cached"));
    CHECK(install["sha256"].get<std::string>().size() == 64);
  } else {
    // Pulled by the first run; the engine's copy serves the rest.
    CHECK((install["method"] == "pull" || install["method"] == "present"));
    CHECK(install["image"] == rt.image);
  }
}

// Every model trains on a data set of its format (CIFAR and token data from the trainer's generators, uploaded).
// Returns {model: t_sum}.
inline std::map<std::string, double> check_every_model(const Daemon& x, const std::string& trainer,
                                                       const Runtime& rt) {
  using nlohmann::json;
  const auto& [d, admin] = std::tie(x.d, x.admin);
  register_generated(x, trainer, "gen-cifar", "cifar-gen", "cifar10-bin", 200);
  register_generated(x, trainer, "gen-tokens", "tokens-gen", "tokens", 200);
  const json small = {{"epochs", 1}, {"limit", 128}, {"test_limit", 64}};
  json mnist = small, cifar = small, tokens = small;
  const json resnet = {{"model", "resnet50"}, {"limit", 8}, {"batch", 4}, {"test_limit", 4}};
  mnist["model"] = json::array({"mnist_cnn", "mnist_mlp"});
  cifar["model"] = json::array({"cifar10_cnn", "cifar_small"});
  cifar["dataset"] = "cifar-gen";
  tokens["model"] = "bilstm";
  tokens["dataset"] = "tokens-gen";
  std::vector<int64_t> ids;
  for (const json& w : {mnist, cifar, tokens, resnet})
    ids.push_back(submit_experiment(d, admin, workload_experiment(w, rt)));

  std::map<std::string, double> t_sum;
  for (int64_t id : ids) {
    const json exp = wait_experiment(d, admin, id, std::chrono::seconds(420));
    CHECK(exp["status"] == "done");
    for (const auto& run : exp["runs"]) {
      const std::string model = run["workload"]["model"];
      INFO(model << ": " << run["reason"]);
      CHECK(run["status"] == "done");
      CHECK(run["phases"].size() == 8);
      CHECK(run["metrics"].contains("test_accuracy"));
      check_install(run, rt);
      MESSAGE(model << (rt.image.empty() ? " native" : " docker") << " t_sum " << run["t_sum"] << " s, learn "
                    << run["phases"]["learn"] << " s, data " << run["workload"].value("dataset", "synthetic"));
      t_sum[model] = run["t_sum"].get<double>();
    }
  }
  std::set<std::string> trained;
  for (const auto& [model, _] : t_sum) trained.insert(model);
  CHECK(trained == std::set<std::string>{"mnist_cnn", "mnist_mlp", "cifar10_cnn", "cifar_small", "bilstm", "resnet50"});
  return t_sum;
}

// One experiment over the eight optimizers: a run each, its own workload, grouped by optimizer in the summary and
// named in the export. Returns the experiment's id.
inline int64_t check_optimizers(const Daemon& x, const Runtime& rt) {
  using nlohmann::json;
  const auto& [d, admin] = std::tie(x.d, x.admin);
  const json optimizers = {"sgd", "momentum", "nesterov", "rmsprop", "adam", "adagrad", "adadelta", "nadam"};
  const int64_t id = submit_experiment(
      d, admin,
      workload_experiment({{"model", "mnist_cnn"}, {"optimizer", optimizers}, {"limit", 128}, {"test_limit", 64}}, rt,
                          2));
  const json exp = wait_experiment(d, admin, id, std::chrono::seconds(420));
  REQUIRE_MESSAGE(exp["status"] == "done", exp["runs"].dump(1));
  REQUIRE(exp["runs"].size() == 8);
  std::set<std::string> seen;
  for (const auto& run : exp["runs"]) {
    seen.insert(run["workload"]["optimizer"].get<std::string>());
    CHECK(run["config"]["workload"] == json{{"optimizer", run["workload"]["optimizer"]}});
    check_install(run, rt);
  }
  CHECK(seen.size() == 8);
  const json summary = exp["summary"];
  REQUIRE(summary["configs"].size() == 8);  // one group per optimizer
  std::set<std::string> grouped;
  for (const auto& c : summary["configs"]) grouped.insert(c["config"]["workload"]["optimizer"].get<std::string>());
  CHECK(grouped.size() == 8);
  auto csv = d.call("GET", "/v1/experiments/" + std::to_string(id) + "/export?format=csv", admin);
  REQUIRE(csv.status == 200);
  CHECK(csv.body.find("\"{\"\"optimizer\"\":\"\"nadam\"\"}\"") != std::string::npos);
  return id;
}

// The inference sweep (sync and async, three batch sizes) runs as learn: images/s, p50/p99 latency and peak RSS
// per batch size stored with the run. Returns the experiment's id.
inline int64_t check_inference_sweep(const Daemon& x, const Runtime& rt) {
  using nlohmann::json;
  const auto& [d, admin] = std::tie(x.d, x.admin);
  const int64_t id = submit_experiment(
      d, admin,
      workload_experiment({{"kind", "infer"}, {"model", "cifar_small"}, {"batch", {1, 4, 16}},
                           {"mode", {"sync", "async"}}, {"source", "files"}, {"iterations", 3}}, rt, 2));
  const json exp = wait_experiment(d, admin, id, std::chrono::seconds(300));
  REQUIRE_MESSAGE(exp["status"] == "done", exp["runs"].dump(1));
  REQUIRE(exp["runs"].size() == 2);
  for (const auto& run : exp["runs"]) {
    INFO(run.dump());
    CHECK(run["phases"].size() == 8);
    CHECK(run["metrics"]["data"]["name"] == "generated");  // load_data made the JPEGs
    check_install(run, rt);
    const json sweep = run["metrics"]["inference"];
    REQUIRE(sweep.size() == 3);
    std::vector<int> batches;
    for (const auto& b : sweep) {
      batches.push_back(b["batch"].get<int>());
      CHECK(b["images_per_s"].get<double>() > 0);
      CHECK(b["p99_ms"].get<double>() >= b["p50_ms"].get<double>());
      CHECK(b["peak_rss_bytes"].get<double>() > 1e6);
    }
    CHECK(batches == std::vector<int>{1, 4, 16});
    const std::string rid = std::to_string(run["id"].get<int64_t>());
    const json arts = d.call("GET", "/v1/runs/" + rid + "/artifacts", admin).json();
    CHECK(arts["artifacts"].size() == 2);  // events.jsonl and samples.csv: no checkpoint
  }
  return id;
}

}  // namespace tsum::testing
