// Multi-node runs through a real tsumd on the local provider: a config's "nodes": 2 makes two machines (two
// sandboxes with a core each), their agents meet through the daemon's rendezvous, and tsum-train trains across
// them (ring, ps); the run's phases are its slowest node's, its cost every node's. A node killed mid-run fails
// the run naming it, and no node is left running.
#include <doctest/doctest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "integration/workload_suite.h"

using namespace tsum;
using namespace tsum::testing;
using nlohmann::json;

namespace {

// Processes of process group pgid that are not zombies, from /proc/PID/stat ("pid (comm) state ppid pgrp ...").
int live_in_group(pid_t pgid) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    std::ifstream in(e.path() / "stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state = 0;
    long ppid = 0, pgrp = 0;
    if (rest >> state >> ppid >> pgrp && pgrp == pgid && state != 'Z') ++n;
  }
  return n;
}

json two_nodes(const json& workload, const json& dist) {
  return {{"name", "nodes"}, {"workload", workload}, {"repetitions", 1}, {"billing", {"per_second_60s_min", "per_hour"}},
          {"configs", {{{"provider", "local"}, {"cores", 1}, {"nodes", 2}, {"dist", dist}}}}};
}

}  // namespace

TEST_CASE("two nodes train together, ring and ps: per-node phases, the slowest node's for the run, both billed") {
  Daemon x;
  const json workload = {{"model", "mnist_mlp"}, {"epochs", 1}, {"limit", 1024}, {"test_limit", 256}, {"threads", 1}};
  const int64_t id = submit_experiment(x.d, x.admin, two_nodes(workload, {"ring", "ps"}));
  const json exp = wait_experiment(x.d, x.admin, id, std::chrono::seconds(300));
  REQUIRE_MESSAGE(exp["status"] == "done", exp["runs"].dump(1));
  REQUIRE(exp["runs"].size() == 2);
  std::set<std::string> dists;
  for (const auto& run : exp["runs"]) {
    INFO(run.dump(1));
    dists.insert(run["config"]["dist"].get<std::string>());
    CHECK(run["nodes"] == 2);
    CHECK(run["config"]["nodes"] == 2);
    REQUIRE(run["node_phases"].size() == 2);
    for (auto phase : {"install", "load_data", "start", "learn", "verify", "save"}) {
      // The run's phase is its slowest node's.
      const double a = run["node_phases"][0]["phases"][phase].get<double>();
      const double b = run["node_phases"][1]["phases"][phase].get<double>();
      CHECK(run["phases"][phase].get<double>() == doctest::Approx(std::max(a, b)));
    }
    CHECK(run["metrics"]["startup_spread_s"].get<double>() >= 0);
    CHECK(run["metrics"]["test_accuracy"].get<double>() > 0.3);
    // Both nodes are billed: per hour, two whole hours of the type.
    CHECK(run["cost"]["per_hour"]["amount"].get<double>() ==
          doctest::Approx(2 * run["hourly_price"].get<double>()));
    const json listing = x.d.call("GET", "/v1/runs/" + std::to_string(run["id"].get<int64_t>()) + "/artifacts",
                                  x.admin).json();
    std::set<std::string> names;
    for (const auto& a : listing["artifacts"]) names.insert(a["name"].get<std::string>());
    CHECK(names == std::set<std::string>{"events.jsonl", "model.pt", "node1/events.jsonl", "node1/samples.csv",
                                         "samples.csv"});
  }
  CHECK(dists == std::set<std::string>{"ring", "ps"});
}

TEST_CASE("a node killed mid-run fails the run naming it, and every node is terminated") {
  Daemon x;
  const json workload = {{"model", "mnist_cnn"}, {"epochs", 20}, {"limit", 2048}, {"test_limit", 256}, {"threads", 1}};
  submit_experiment(x.d, x.admin, two_nodes(workload, "ring"));
  json run;
  REQUIRE(eventually([&] {
    run = x.d.call("GET", "/v1/runs/1", x.admin).json();
    return run["status"] == "learning" || run["status"] == "failed";
  }, std::chrono::seconds(180)));
  REQUIRE(run["status"] == "learning");
  const json nodes = run["instance"]["data"]["nodes"];
  REQUIRE(nodes.size() == 2);
  const pid_t victim = nodes[1]["data"]["pid"].get<int>(), other = nodes[0]["data"]["pid"].get<int>();
  REQUIRE(victim > 0);
  REQUIRE(kill(-victim, SIGKILL) == 0);  // the node's whole process group: agent and trainer
  REQUIRE(eventually([&] {
    run = x.d.call("GET", "/v1/runs/1", x.admin).json();
    return run["status"] == "failed" || run["status"] == "done";
  }, std::chrono::seconds(120)));
  INFO(run.dump(1));
  CHECK(run["status"] == "failed");
  CHECK(run["reason"].get<std::string>().find("node 1") != std::string::npos);
  CHECK(run["phases"]["poweroff"].is_number());  // every node confirmed gone
  CHECK(live_in_group(other) == 0);  // node 0's processes too (a zombie awaiting its reaper is not running)
}

TEST_CASE("multi-node configs the daemon cannot run are refused before anything starts") {
  Daemon x;
  auto r = x.d.call("POST", "/v1/experiments", x.admin,
                    two_nodes({{"kind", "infer"}, {"model", "cifar_small"}, {"batch", {1}}}, "ring").dump());
  CHECK(r.status == 422);
  CHECK(r.body.find("runs on one") != std::string::npos);
  auto two = two_nodes({{"model", "mnist_mlp"}}, "ring");
  two["configs"][0]["provider"] = "ssh";
  two["configs"][0].erase("cores");
  two["configs"][0]["instance_type"] = "gpu-box";
  r = x.d.call("POST", "/v1/experiments", x.admin, two.dump());
  CHECK(r.status == 422);
  CHECK(r.body.find("nodes 2 on 'ssh'") != std::string::npos);
  CHECK(x.d.call("GET", "/v1/runs", x.admin).json()["runs"].empty());
}
