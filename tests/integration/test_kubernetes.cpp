// The Kubernetes provider end to end: the real tsumd with providers.kubernetes naming the fake API server
// (tests/fakes/kubernetes/fake_kube.py, over TLS with a token), whose kubelet runs each Pod as a real container of
// the workload image in the test Docker engine, on a Docker network of its own: a Pod shares only that network
// with the daemon (it reaches tsumd at the network's gateway, never its loopback or disk). Real tsum-train on
// real Fashion-MNIST. One rig for every case: the engine, the network, the fake and tsumd start once.
// Needs root (the Docker engine) and the workload image (tests/support/docker_env.h makes it when missing).
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "integration/daemon_process.h"
#include "support/docker_env.h"
#include "support/fake_kube.h"

using namespace tsum;
using namespace tsum::testing;
using nlohmann::json;

namespace {

// Two 2-core nodes (shape "2c-3g") and one 1-core node of instance type tiny.solo that another tenant's Pod holds.
const char* kNodes = R"([
  {"name": "node-a", "cpu": "2", "memory": "3Gi"},
  {"name": "node-b", "cpu": "2", "memory": "3Gi"},
  {"name": "solo", "cpu": "1", "memory": "2Gi", "labels": {"node.kubernetes.io/instance-type": "tiny.solo"},
   "pods": [{"cpu": "1", "memory": "1Gi"}]}])";

struct KubeRig {
  KubeRig() {
    // Networks a killed run of this test left behind (named tsumk8s<pid>, that pid gone) are removed first.
    const auto stale = docker.docker("network ls --filter name=tsumk8s --format '{{.Name}}'", std::chrono::seconds(30));
    std::istringstream names(stale.output);
    for (std::string name; std::getline(names, name);)
      if (name.starts_with("tsumk8s") && kill(std::atoi(name.c_str() + 7), 0) != 0) {
        const auto left = docker.docker("ps -aq --filter network=" + name, std::chrono::seconds(30));
        if (left.status == 0 && !left.output.empty()) {
          std::string ids = left.output;
          std::replace(ids.begin(), ids.end(), '\n', ' ');
          docker.docker("rm -f -v " + ids, std::chrono::seconds(60));
        }
        docker.docker("network rm " + name, std::chrono::seconds(30));
      }
    network = "tsumk8s" + std::to_string(getpid());
    // A /24 of 10.232/16 no other network of the engine holds.
    DockerCommand made;
    for (int i = 0; i < 20; ++i) {
      subnet = "10.232." + std::to_string(20 + (getpid() + i) % 200);
      gateway = subnet + ".1";
      made = docker.docker("network create --subnet " + subnet + ".0/24 --gateway " + gateway + " " + network,
                           std::chrono::seconds(60));
      if (made.status == 0) break;
    }
    REQUIRE_MESSAGE(made.status == 0, made.output);
    kube = std::make_unique<FakeKube>(FakeKubeOptions{
        .nodes = kNodes, .docker_network = network, .docker_subnet = subnet, .docker_host = docker.docker_host()});
    const json section = {{"api_url", kube->url()},
                          {"ca_file", kube->ca_file()},
                          {"token_file", kube->token_file()},
                          {"namespace", "default"},
                          {"shapes", {{"2c-3g", {{"hourly_price", 0.2}}}}},
                          {"prices", {{"vcpu_hour", 0.05}, {"gib_hour", 0.01}}},
                          {"startup_deadline_s", 45},
                          {"active_deadline_s", 900}};
    std::ofstream(dir.file("tsum.json")) << json{{"providers", {{"kubernetes", section}}}}.dump(2);
    chmod(dir.file("tsum.json").c_str(), 0600);
    d = std::make_unique<DaemonProcess>(dir.file("t.db"), std::vector<std::string>{"--config", dir.file("tsum.json")},
                                        gateway);
    admin = d->admin_token();
    start_daemon();
  }
  ~KubeRig() {
    d.reset();
    kube.reset();  // removes its containers
    docker.docker("network rm " + network, std::chrono::seconds(60));
  }
  void start_daemon() { d->start({"--public-url", "http://" + gateway + ":{port}", "--insecure-agents"}); }

  json experiment(const json& configs, const json& workload) const {
    return {{"name", "k8s"},
            {"repetitions", 1},
            {"billing", {"per_second_60s_min", "per_hour"}},
            {"workload", workload},
            {"configs", configs}};
  }
  // Pods, Services and Secrets tsum left in the namespace.
  size_t leftovers() const {
    size_t n = 0;
    for (const char* kind : {"pods", "services", "secrets"})
      for (const auto& item : kube->items(kind))
        if (item["metadata"]["labels"].value("app.kubernetes.io/managed-by", "") == "tsum") ++n;
    return n;
  }
  std::string logs() const { return "tsumd:\n" + d->log() + "\nfake:\n" + kube->log(); }

  DockerEnv docker{{.push = false}};
  TempDir dir{"tsum-k8s-it"};
  std::string subnet, gateway, network;
  std::unique_ptr<FakeKube> kube;
  std::unique_ptr<DaemonProcess> d;
  std::string admin;
};

json cnn(int limit, int epochs = 1) {
  return {{"model", "mnist_cnn"},
          {"dataset", "fashion-mnist"},
          {"epochs", epochs},
          {"limit", limit},
          {"test_limit", 200},
          {"threads", 1},
          {"image", DockerEnv::kLocalImage}};
}

json wait_run_status(const KubeRig& rig, int64_t exp_id, const std::set<std::string>& wanted,
                     std::chrono::seconds limit) {
  json run;
  eventually(
      [&] {
        json exp = rig.d->call("GET", "/v1/experiments/" + std::to_string(exp_id), rig.admin).json();
        if (!exp["runs"].is_array() || exp["runs"].empty()) return false;
        run = exp["runs"][0];
        return wanted.count(run.value("status", "")) > 0;
      },
      limit);
  return run;
}

}  // namespace

TEST_CASE("kubernetes: runs as Pods end to end, the scheduler's and the kubelet's reasons, a kill -9 leaves nothing") {
  if (geteuid() != 0) FAIL("the Kubernetes integration test needs root (the Docker engine); run it as root");
  KubeRig rig;
  auto& d = *rig.d;

  // Offers: the two shapes, one priced per shape, one per vCPU- and GiB-hour.
  const json offers = d.call("GET", "/v1/offers", rig.admin).json();
  std::map<std::string, json> by_type;
  for (const auto& o : offers["offers"])
    if (o["provider"] == "kubernetes") by_type[o["instance_type"].get<std::string>()] = o;
  REQUIRE_MESSAGE(by_type.size() == 2, offers.dump());
  CHECK(by_type["2c-3g"]["hourly_price"] == 0.2);
  CHECK(by_type["2c-3g"]["vcpus"] == 2);
  CHECK(by_type["tiny.solo"]["hourly_price"].get<double>() == doctest::Approx(1 * 0.05 + 2 * 0.01));

  {
    // One Pod reaches all 8 phases; the Pod, its Secret and results are handled; nothing is left.
    const json cfg = {{{"provider", "kubernetes"}, {"instance_type", "2c-3g"}, {"runtime", "docker"}}};
    const json exp = wait_experiment(d, rig.admin, submit_experiment(d, rig.admin, rig.experiment(cfg, cnn(600))),
                                     std::chrono::seconds(300));
    INFO(rig.logs());
    REQUIRE_MESSAGE(exp["status"] == "done", exp["runs"].dump(1));
    const json run = exp["runs"][0];
    for (const char* p : {"startup", "install", "load_data", "start", "learn", "verify", "save", "poweroff"}) {
      CAPTURE(p);
      CHECK(run["phases"][p].is_number());
    }
    CHECK(run["metrics"]["install"]["method"] == "image");
    REQUIRE(run["metrics"]["queue_wait_s"].is_number());
    CHECK(run["metrics"]["queue_wait_s"].get<double>() <= run["phases"]["startup"].get<double>() + 1);
    CHECK(run["metrics"]["test_accuracy"].get<double>() > 0.3);
    const std::string rid = std::to_string(run["id"].get<int64_t>());
    CHECK(d.call("GET", "/v1/runs/" + rid + "/artifacts/model.pt", rig.admin).body.size() > 100000);
    MESSAGE("kubernetes, 1 Pod: startup "
            << run["phases"]["startup"] << " s (queue wait " << run["metrics"]["queue_wait_s"] << " s), install "
            << run["phases"]["install"] << ", load_data " << run["phases"]["load_data"] << ", start "
            << run["phases"]["start"] << ", learn " << run["phases"]["learn"] << ", verify " << run["phases"]["verify"]
            << ", save " << run["phases"]["save"] << ", poweroff " << run["phases"]["poweroff"] << "; t_sum "
            << run["t_sum"] << " s");
    CHECK(rig.leftovers() == 0);
  }
  {
    // Two Pods on the two nodes, ring all-reduce over the Pods' own addresses.
    const json cfg = {{{"provider", "kubernetes"},
                       {"instance_type", "2c-3g"},
                       {"runtime", "docker"},
                       {"nodes", 2},
                       {"dist", "ring"}}};
    json workload = {{"model", "mnist_mlp"}, {"epochs", 1},  {"limit", 1024},
                     {"test_limit", 256},    {"threads", 1}, {"image", DockerEnv::kLocalImage}};
    const json exp = wait_experiment(d, rig.admin, submit_experiment(d, rig.admin, rig.experiment(cfg, workload)),
                                     std::chrono::seconds(300));
    REQUIRE_MESSAGE(exp["status"] == "done", exp["runs"].dump(1));
    const json run = exp["runs"][0];
    CHECK(run["nodes"] == 2);
    REQUIRE(run["node_phases"].size() == 2);
    CHECK(run["node_phases"][1]["phases"]["learn"].get<double>() > 0);
    const json listing =
        d.call("GET", "/v1/runs/" + std::to_string(run["id"].get<int64_t>()) + "/artifacts", rig.admin).json();
    std::set<std::string> names;
    for (const auto& a : listing["artifacts"]) names.insert(a["name"].get<std::string>());
    CHECK(names == std::set<std::string>{"events.jsonl", "model.pt", "node1/events.jsonl", "node1/samples.csv",
                                         "samples.csv"});
    CHECK(run["metrics"]["test_accuracy"].get<double>() > 0.3);
    MESSAGE("kubernetes, 2 Pods (ring): startup " << run["phases"]["startup"] << " s (queue wait "
                                                  << run["metrics"]["queue_wait_s"] << " s), learn "
                                                  << run["phases"]["learn"] << " s, t_sum " << run["t_sum"]);
    CHECK(rig.leftovers() == 0);
  }
  {
    // A user's job in its own image: the command runs in the Pod's container itself, with its marks, its
    // environment and /tsum/out uploaded. Its learn phase lasts until the test releases it, a second after the
    // daemon heard its epoch (which derived learn's begin mark).
    const std::string token = "k8s-job-" + std::to_string(getpid());
    const std::string script = R"(set -e
ls /tsum/data > /tsum/out/data-files.txt
echo '{"phase": "start", "mark": "end"}' > "$TSUM_EVENTS"
echo '{"event": "epoch", "loss": 0.5}' > "$TSUM_EVENTS"
)" + DockerEnv::wait_for_release(token) + R"(echo '{"phase": "learn", "mark": "end"}' > "$TSUM_EVENTS"
mkdir -p /tsum/out/ckpt
echo "$GREETING" > /tsum/out/ckpt/weights.bin
)";
    const json workload = {{"image", DockerEnv::kLocalImage},
                           {"command", {"sh", "-c", script}},
                           {"env", {{"GREETING", "hello 'quoted' $world"}}},
                           {"dataset", "fashion-mnist"}};
    const json cfg = {{{"provider", "kubernetes"}, {"instance_type", "2c-3g"}, {"runtime", "docker"}}};
    const int64_t id = submit_experiment(d, rig.admin, rig.experiment(cfg, workload));
    json seen;
    const bool epoch_heard = eventually(
        [&] {
          seen = d.call("GET", "/v1/runs?experiment=" + std::to_string(id), rig.admin).json();
          if (!seen["runs"].is_array() || seen["runs"].empty()) return false;
          seen = d.call("GET", "/v1/runs/" + std::to_string(seen["runs"][0]["id"].get<int64_t>()), rig.admin).json();
          return seen["epochs"].size() == 1;
        },
        std::chrono::seconds(300));
    REQUIRE_MESSAGE(epoch_heard, seen.dump(1));
    std::this_thread::sleep_for(std::chrono::seconds(1));
    CHECK(rig.docker.release(token) >= 1);
    const json exp = wait_experiment(d, rig.admin, id, std::chrono::seconds(300));
    REQUIRE_MESSAGE(exp["status"] == "done", exp["runs"].dump(1));
    const json run =
        d.call("GET", "/v1/runs/" + std::to_string(exp["runs"][0]["id"].get<int64_t>()), rig.admin).json();
    CHECK(run["phases"].size() == 8);
    CHECK(run["phases"]["learn"].get<double>() >= 0.98);  // at least the second the test held it
    CHECK(run["epochs"].size() == 1);
    const std::string rid = std::to_string(run["id"].get<int64_t>());
    CHECK(d.call("GET", "/v1/runs/" + rid + "/artifacts/ckpt%2Fweights.bin", rig.admin).body ==
          "hello 'quoted' $world\n");
    CHECK(d.call("GET", "/v1/runs/" + rid + "/artifacts/data-files.txt", rig.admin)
              .body.find("train-images-idx3-ubyte") != std::string::npos);
    CHECK(rig.leftovers() == 0);
  }
  {
    // The one tiny.solo node is held by another tenant: the Pod cannot be placed, and the run fails at the startup
    // deadline with the scheduler's own words.
    const json cfg = {{{"provider", "kubernetes"}, {"instance_type", "tiny.solo"}, {"runtime", "docker"}}};
    const json exp = wait_experiment(d, rig.admin, submit_experiment(d, rig.admin, rig.experiment(cfg, cnn(300))),
                                     std::chrono::seconds(120));
    CHECK(exp["status"] == "failed");
    const std::string reason = exp["runs"][0].value("reason", "");
    CHECK_MESSAGE(reason.find("unschedulable: 0/3 nodes are available: 1 Insufficient cpu") != std::string::npos,
                  reason);
    CHECK_MESSAGE(reason.find("startup deadline") != std::string::npos, reason);
    MESSAGE("unschedulable: " << reason);
    CHECK(rig.leftovers() == 0);
  }
  {
    // An image no registry has: the kubelet's pull error ends the run at once (the reason is the kubelet's, not
    // the startup deadline's).
    json workload = cnn(300);
    workload["image"] = "registry.tsum-test.invalid/nope:1";
    const json cfg = {{{"provider", "kubernetes"}, {"instance_type", "2c-3g"}, {"runtime", "docker"}}};
    const auto t0 = std::chrono::steady_clock::now();
    const json exp = wait_experiment(d, rig.admin, submit_experiment(d, rig.admin, rig.experiment(cfg, workload)),
                                     std::chrono::seconds(120));
    CHECK(exp["status"] == "failed");
    const std::string reason = exp["runs"][0].value("reason", "");
    CHECK_MESSAGE(reason.find("image pull failed: ErrImagePull") != std::string::npos, reason);
    MESSAGE("bad image, after " << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
                                << " s: " << reason);
    CHECK(rig.leftovers() == 0);
  }
  {
    // The native runtime is refused before anything is made; a cancel deletes the run's Pod and Secret.
    const json native = {{{"provider", "kubernetes"}, {"instance_type", "2c-3g"}}};
    auto refused = d.call("POST", "/v1/experiments", rig.admin, rig.experiment(native, cnn(300)).dump());
    CHECK(refused.status == 422);
    CHECK_MESSAGE(refused.body.find("runs containers only") != std::string::npos, refused.body);
    const json cfg = {{{"provider", "kubernetes"}, {"instance_type", "2c-3g"}, {"runtime", "docker"}}};
    const int64_t id = submit_experiment(d, rig.admin, rig.experiment(cfg, cnn(3000, 5)));
    const json learning = wait_run_status(rig, id, {"learning"}, std::chrono::seconds(180));
    REQUIRE_MESSAGE(learning.value("status", "") == "learning", learning.dump(1));
    CHECK(rig.leftovers() >= 2);  // its Pod and Secret
    CHECK(d.call("DELETE", "/v1/experiments/" + std::to_string(id), rig.admin).status == 202);
    const json cancelled = wait_run_status(rig, id, {"cancelled"}, std::chrono::seconds(120));
    CHECK(cancelled.value("status", "") == "cancelled");
    CHECK(cancelled["phases"]["poweroff"].is_number());
    CHECK(rig.leftovers() == 0);
  }
  {
    // kill -9 of tsumd while its Pod learns, then a restart: the restarted daemon takes the run back, it finishes,
    // and its objects are deleted.
    const json cfg = {{{"provider", "kubernetes"}, {"instance_type", "2c-3g"}, {"runtime", "docker"}}};
    const int64_t id = submit_experiment(d, rig.admin, rig.experiment(cfg, cnn(3000, 5)));
    const json learning = wait_run_status(rig, id, {"learning"}, std::chrono::seconds(180));
    REQUIRE_MESSAGE(learning.value("status", "") == "learning", learning.dump(1));
    d.stop(SIGKILL);
    CHECK(rig.kube->items("pods").size() >= 1);
    rig.start_daemon();
    const json settled = wait_run_status(rig, id, {"done", "failed", "cancelled"}, std::chrono::seconds(240));
    INFO(settled.dump(1));
    CHECK(settled.value("status", "") == "done");
    MESSAGE("kill -9 while learning, then a restart: the run " << settled.value("status", "") << ": "
                                                               << settled.value("reason", ""));
    CHECK(eventually([&] { return rig.leftovers() == 0; }, std::chrono::seconds(60)));
  }
}
