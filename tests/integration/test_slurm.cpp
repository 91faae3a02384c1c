// The Slurm provider end to end: the real tsumd with a config file naming a real Slurm's login node
// (tests/support/slurm_cluster.h: slurmctld, slurmd and munge on guest machines of their own), the agent run
// by sbatch/srun on a compute node, reaching the daemon at its public URL on the test network; real
// tsum-train on real Fashion-MNIST. Needs root; a missing precondition fails the test.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <tuple>

#include "integration/daemon_process.h"
#include "support/slurm_cluster.h"

using namespace tsum;
using namespace tsum::testing;
using nlohmann::json;

namespace {

std::string make_key(const TempDir& dir) {
  const std::string key = dir.file("id_test");
  REQUIRE(std::system(("ssh-keygen -q -t ed25519 -N '' -C tsum-test -f " + key).c_str()) == 0);
  return key;
}

// A real Slurm of `computes` compute machines and a tsumd configured with its login node (partition "batch" at
// 0.4 per node-hour under `rule`), listening on the test network where the compute nodes reach it.
struct SlurmRig {
  SlurmRig(int computes, const std::string& rule)
      : cluster(net, {.computes = computes, .authorized_key = key + ".pub"}),
        d(dir.file("t.db"), {"--config", write_config(rule)}, net.listen_address()) {
    admin = d.admin_token();
    d.start({"--public-url", "http://" + net.listen_address() + ":{port}", "--insecure-agents"});
  }

  std::string write_config(const std::string& rule) {
    const json section = {{"login", {{"name", "ctl"}, {"address", cluster.login_address()}, {"user", "root"}, {"key_file", key}}},
                          {"partitions", {{"batch", {{"hourly_price", 0.4}, {"billing_rule", rule}}}}},
                          {"work_dir", "/srv/tsum"}, {"connect_timeout_s", 5}};
    const std::string config = dir.file("tsum.json");
    std::ofstream(config) << json{{"providers", {{"slurm", section}}}}.dump(2);
    chmod(config.c_str(), 0600);
    return config;
  }

  TestNetwork net;
  TempDir dir{"tsum-slurm-it"};
  std::string key = make_key(dir);
  SlurmCluster cluster;
  DaemonProcess d;
  std::string admin;
};

}  // namespace

TEST_CASE("slurm: a single-node run through tsumd reaches all 8 phases on a compute node and leaves the queue empty") {
  if (geteuid() != 0) FAIL("the Slurm integration test needs root (guest machines); run it as root");
  SlurmRig rig(1, "step:1,min:900");
  auto [cluster, d, admin] = std::tie(rig.cluster, rig.d, rig.admin);  // references into the rig
  MESSAGE("Slurm cluster up in " << cluster.start_seconds() << " s");
  int slurm_offers = 0;
  const json offers = d.call("GET", "/v1/offers", admin).json();
  INFO(offers.dump());
  for (const auto& o : offers["offers"])
    if (o["provider"] == "slurm") {
      ++slurm_offers;
      if (o["instance_type"] == "batch") CHECK(o["hourly_price"] == 0.4);
    }
  CHECK(slurm_offers == 2);  // batch and held

  json body = json::parse(tiny_experiment(300, 200));
  body["configs"] = {{{"provider", "slurm"}, {"instance_type", "batch"}}};
  auto created = d.call("POST", "/v1/experiments", admin, body.dump());
  REQUIRE(created.status == 201);
  const std::string id = std::to_string(created.json()["id"].get<int64_t>());
  json exp;
  bool finished = eventually([&] {
    exp = d.call("GET", "/v1/experiments/" + id, admin).json();
    return exp["status"] == "done" || exp["status"] == "failed" || exp["status"] == "cancelled";
  }, std::chrono::seconds(400));
  INFO(exp.dump(2));
  INFO(d.log());
  INFO(cluster.logs());
  REQUIRE(finished);
  REQUIRE(exp["status"] == "done");
  const json run = exp["runs"][0];
  for (const char* p : {"startup", "install", "load_data", "start", "learn", "verify", "save", "poweroff"}) {
    CAPTURE(p);
    CHECK(run["phases"][p].is_number());
  }
  MESSAGE("startup " << run["phases"]["startup"] << " s, t_sum " << run["t_sum"] << " s");
  CHECK(run["metrics"]["install"]["method"] == "bundle");
  // Submit to start on the controller's clock (1 s resolution), inside startup.
  REQUIRE(run["metrics"]["queue_wait_s"].is_number());
  CHECK(run["metrics"]["queue_wait_s"].get<double>() >= 0);
  CHECK(run["metrics"]["queue_wait_s"].get<double>() <= run["phases"]["startup"].get<double>() + 1);
  const std::string rid = std::to_string(run["id"].get<int64_t>());
  CHECK(d.call("GET", "/v1/runs/" + rid + "/artifacts/model.pt", admin).body.size() > 100000);
  // The job left the queue, and the login node holds nothing of the submission (it held the run token).
  std::string queue = cluster.ctl("squeue -h -o %i");
  CHECK(queue.empty());
  CHECK(cluster.ctl("ls -A /srv/tsum") == "");
  CHECK(d.log().find("BEGIN OPENSSH PRIVATE KEY") == std::string::npos);
}

TEST_CASE("slurm: 2-node runs, ring and ps, are one job of two nodes whose agents meet through tsumd") {
  if (geteuid() != 0) FAIL("the Slurm integration test needs root (guest machines); run it as root");
  SlurmRig rig(2, "per_hour");
  auto [cluster, d, admin] = std::tie(rig.cluster, rig.d, rig.admin);  // references into the rig
  const json body = {{"name", "slurm nodes"}, {"repetitions", 1}, {"billing", {"per_hour"}},
                     {"workload", {{"model", "mnist_mlp"}, {"epochs", 1}, {"limit", 1024}, {"test_limit", 256},
                                   {"threads", 1}}},
                     {"configs", {{{"provider", "slurm"}, {"instance_type", "batch"}, {"nodes", 2},
                                   {"dist", {"ring", "ps"}}}}}};
  const json exp = wait_experiment(d, admin, submit_experiment(d, admin, body), std::chrono::seconds(600));
  INFO(cluster.logs());
  REQUIRE_MESSAGE(exp["status"] == "done", exp["runs"].dump(1));
  REQUIRE(exp["runs"].size() == 2);
  for (const auto& run : exp["runs"]) {
    INFO(run.dump(1));
    CHECK(run["nodes"] == 2);
    CHECK(run["instance"]["provider"] == "slurm");
    CHECK_FALSE(run["instance"]["data"].value("nodes", json()).is_array());  // one job, not a group of instances
    REQUIRE(run["node_phases"].size() == 2);
    CHECK(run["node_phases"][1]["phases"]["learn"].get<double>() > 0);
    CHECK(run["metrics"]["test_accuracy"].get<double>() > 0.3);
    CHECK(run["cost"]["per_hour"]["amount"].get<double>() == doctest::Approx(2 * 0.4));
  }
  CHECK(cluster.ctl("squeue -h -o %i").empty());
}
