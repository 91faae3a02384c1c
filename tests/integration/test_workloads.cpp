// The whole tsum-train surface through a real tsumd on the local provider: every model on a data set of its
// format (CIFAR and token data from tsum-train gen-cifar / gen-tokens, uploaded), the eight optimizers in one
// experiment, the inference sweep measured as learn, and workloads the daemon must refuse before anything starts.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <fstream>
#include <set>

#include "daemon/artifacts/tar_archive.h"
#include "integration/daemon_process.h"

using namespace tsum;
using namespace tsum::testing;
using nlohmann::json;

namespace {

json wait_experiment(const DaemonProcess& d, const std::string& admin, int64_t id, std::chrono::seconds limit) {
  json exp;
  bool finished = eventually([&] {
    exp = d.call("GET", "/v1/experiments/" + std::to_string(id), admin).json();
    return exp["status"] == "done" || exp["status"] == "failed" || exp["status"] == "cancelled";
  }, limit);
  INFO(exp.dump(2));
  INFO(d.log());
  REQUIRE(finished);
  return exp;
}

// Makes a data set with `tsum-train GEN DIR --n N`, packs it and registers it as NAME of FORMAT.
void register_generated(const DaemonProcess& d, const std::string& admin, const TempDir& dir, const std::string& gen,
                        const std::string& name, const std::string& format, int n) {
  const std::string out = dir.file(name);
  const std::string cmd = std::string(TSUM_TRAIN_BIN) + " " + gen + " " + out + " --n " + std::to_string(n) + " >/dev/null";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(out)) files.push_back(e.path().string());
  REQUIRE(daemon::write_tar_gz(out + ".tar.gz", files).ok());
  std::ifstream in(out + ".tar.gz", std::ios::binary);
  const std::string body{std::istreambuf_iterator<char>(in), {}};
  auto r = api::http_call("127.0.0.1", d.port(), "POST", "/v1/datasets?name=" + name + "&format=" + format, body,
                          {{"Authorization", "Bearer " + admin}, {"Content-Type", "application/gzip"}});
  INFO(r.body);
  REQUIRE(r.status == 201);
}

json experiment(const json& workload, int cores = 1) {
  return {{"name", "workloads"}, {"workload", workload}, {"repetitions", 1}, {"billing", {"per_second_60s_min"}},
          {"configs", {{{"provider", "local"}, {"cores", cores}}}}};
}

int64_t submit(const DaemonProcess& d, const std::string& admin, const json& body) {
  auto r = d.call("POST", "/v1/experiments", admin, body.dump());
  INFO(r.body);
  REQUIRE(r.status == 201);
  return r.json()["id"].get<int64_t>();
}

struct Daemon {
  TempDir dir;
  DaemonProcess d{dir.file("t.db")};
  std::string admin = d.admin_token();
  Daemon() { d.start(); }
};

}  // namespace

TEST_CASE("every model trains through the daemon on a data set of its format; t_sum per model") {
  Daemon x;
  register_generated(x.d, x.admin, x.dir, "gen-cifar", "cifar-gen", "cifar10-bin", 200);
  register_generated(x.d, x.admin, x.dir, "gen-tokens", "tokens-gen", "tokens", 200);
  const json small = {{"epochs", 1}, {"limit", 128}, {"test_limit", 64}};
  std::vector<int64_t> ids;
  json mnist = small, cifar = small, tokens = small, resnet = {{"model", "resnet50"}, {"limit", 8}, {"batch", 4},
                                                               {"test_limit", 4}};
  mnist["model"] = json::array({"mnist_cnn", "mnist_mlp"});
  cifar["model"] = json::array({"cifar10_cnn", "cifar_small"});
  cifar["dataset"] = "cifar-gen";
  tokens["model"] = "bilstm";
  tokens["dataset"] = "tokens-gen";
  for (const json& w : {mnist, cifar, tokens, resnet}) ids.push_back(submit(x.d, x.admin, experiment(w)));

  std::set<std::string> trained;
  for (int64_t id : ids) {
    json exp = wait_experiment(x.d, x.admin, id, std::chrono::seconds(420));
    CHECK(exp["status"] == "done");
    for (const auto& run : exp["runs"]) {
      const std::string model = run["workload"]["model"];
      INFO(model << ": " << run["reason"]);
      CHECK(run["status"] == "done");
      CHECK(run["phases"].size() == 8);
      CHECK(run["metrics"].contains("test_accuracy"));
      MESSAGE(model << " t_sum " << run["t_sum"] << " s, learn " << run["phases"]["learn"] << " s, data "
                    << run["workload"].value("dataset", "synthetic"));
      trained.insert(model);
    }
  }
  CHECK(trained == std::set<std::string>{"mnist_cnn", "mnist_mlp", "cifar10_cnn", "cifar_small", "bilstm", "resnet50"});
}

TEST_CASE("one experiment compares the eight optimizers: a run each, its own workload, grouped by optimizer") {
  Daemon x;
  const json optimizers = {"sgd", "momentum", "nesterov", "rmsprop", "adam", "adagrad", "adadelta", "nadam"};
  const int64_t id = submit(x.d, x.admin, experiment({{"model", "mnist_cnn"}, {"optimizer", optimizers}, {"limit", 128},
                                                      {"test_limit", 64}}, 2));
  json exp = wait_experiment(x.d, x.admin, id, std::chrono::seconds(420));
  REQUIRE_MESSAGE(exp["status"] == "done", exp["runs"].dump(1));
  REQUIRE(exp["runs"].size() == 8);
  std::set<std::string> seen;
  for (const auto& run : exp["runs"]) {
    seen.insert(run["workload"]["optimizer"].get<std::string>());
    CHECK(run["config"]["workload"] == json{{"optimizer", run["workload"]["optimizer"]}});
  }
  CHECK(seen.size() == 8);
  const json summary = exp["summary"];
  REQUIRE(summary["configs"].size() == 8);  // one group per optimizer
  std::set<std::string> grouped;
  for (const auto& c : summary["configs"]) grouped.insert(c["config"]["workload"]["optimizer"].get<std::string>());
  CHECK(grouped.size() == 8);
  // The export names the varied field in every row.
  auto csv = x.d.call("GET", "/v1/experiments/" + std::to_string(id) + "/export?format=csv", x.admin);
  REQUIRE(csv.status == 200);
  CHECK(csv.body.find("\"{\"\"optimizer\"\":\"\"nadam\"\"}\"") != std::string::npos);
}

TEST_CASE("the inference sweep runs as learn: images/s, p50/p99 latency and peak RSS per batch size") {
  Daemon x;
  const int64_t id = submit(x.d, x.admin, experiment({{"kind", "infer"}, {"model", "cifar_small"}, {"batch", {1, 4, 16}},
                                                      {"mode", {"sync", "async"}}, {"source", "files"},
                                                      {"iterations", 3}}, 2));
  json exp = wait_experiment(x.d, x.admin, id, std::chrono::seconds(300));
  REQUIRE_MESSAGE(exp["status"] == "done", exp["runs"].dump(1));
  REQUIRE(exp["runs"].size() == 2);
  for (const auto& run : exp["runs"]) {
    INFO(run.dump());
    CHECK(run["phases"].size() == 8);
    CHECK(run["metrics"]["data"]["name"] == "generated");  // load_data made the JPEGs
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
    auto arts = x.d.call("GET", "/v1/runs/" + rid + "/artifacts", x.admin).json();
    CHECK(arts["artifacts"].size() == 2);  // events.jsonl and samples.csv: no checkpoint
  }
}

TEST_CASE("workloads the daemon cannot run are 422s naming the field, and nothing starts") {
  Daemon x;
  register_generated(x.d, x.admin, x.dir, "gen-cifar", "cifar-gen", "cifar10-bin", 50);
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

  register_generated(x.d, x.admin, x.dir, "gen-cifar", "cifar-gen", "cifar10-bin", 50);
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
