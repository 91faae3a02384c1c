// The Slurm provider end to end: the real tsumd with a config file naming a real Slurm's login node
// (tests/support/slurm_cluster.h: slurmctld, slurmd and munge on guest machines of their own), the agent run
// by sbatch/srun on a compute node, reaching the daemon at its public URL on the test network; real
// tsum-train on real Fashion-MNIST. Needs root; a missing precondition fails the test.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include "integration/daemon_process.h"
#include "support/slurm_cluster.h"

using namespace tsum;
using namespace tsum::testing;
using nlohmann::json;

TEST_CASE("slurm: a single-node run through tsumd reaches all 8 phases on a compute node and leaves the queue empty") {
  if (geteuid() != 0) FAIL("the Slurm integration test needs root (guest machines); run it as root");
  TestNetwork net;
  TempDir dir{"tsum-slurm-it"};
  const std::string key = dir.file("id_test");
  REQUIRE(std::system(("ssh-keygen -q -t ed25519 -N '' -C tsum-test -f " + key).c_str()) == 0);
  SlurmCluster cluster(net, {.computes = 1, .authorized_key = key + ".pub"});
  MESSAGE("Slurm cluster up in " << cluster.start_seconds() << " s");
  const json section = {{"login", {{"name", "ctl"}, {"address", cluster.login_address()}, {"user", "root"}, {"key_file", key}}},
                        {"partitions", {{"batch", {{"hourly_price", 0.4}, {"billing_rule", "step:1,min:900"}}}}},
                        {"work_dir", "/srv/tsum"}, {"connect_timeout_s", 5}};
  const std::string config = dir.file("tsum.json");
  std::ofstream(config) << json{{"providers", {{"slurm", section}}}}.dump(2);
  chmod(config.c_str(), 0600);

  DaemonProcess d(dir.file("t.db"), {"--config", config}, net.listen_address());
  const std::string admin = d.admin_token();
  d.start({"--public-url", "http://" + net.listen_address() + ":{port}", "--insecure-agents"});
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
  const std::string rid = std::to_string(run["id"].get<int64_t>());
  CHECK(d.call("GET", "/v1/runs/" + rid + "/artifacts/model.pt", admin).body.size() > 100000);
  // The job left the queue, and the login node holds nothing of the submission (it held the run token).
  std::string queue = cluster.ctl("squeue -h -o %i");
  CHECK(queue.empty());
  CHECK(cluster.ctl("ls -A /srv/tsum") == "");
  CHECK(d.log().find("BEGIN OPENSSH PRIVATE KEY") == std::string::npos);
}
