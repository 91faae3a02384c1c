// The ssh provider end to end: the real tsumd with a config file naming two hosts, each a real sshd on a guest
// machine of the stock Debian root sharing nothing with the daemon but a test network
// (tests/integration/netns_sshd.h), real tsum-train on real Fashion-MNIST. Needs root; a missing
// precondition fails the test.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>

#include "integration/daemon_process.h"
#include "integration/netns_sshd.h"
#include "support/docker_env.h"

using namespace tsum;
using namespace tsum::testing;
namespace fs = std::filesystem;

namespace {

// The hosts' work directory: a path of theirs (it does not exist on the daemon's machine).
constexpr const char* kRemoteWork = "/srv/tsum";

// Two hosts, a client key they both accept, and a config file for tsumd naming them.
struct SshLab {
  TestNetwork net;
  TempDir dir{"tsum-ssh"};
  std::string key = dir.file("id_test");
  std::unique_ptr<NetnsSshd> h1, h2;
  std::string config = dir.file("tsum.json");

  SshLab() {
    require_ssh_test_preconditions();
    REQUIRE(shell("ssh-keygen -q -t ed25519 -N '' -C tsum-test -f " + key) == 0);
    h1 = std::make_unique<NetnsSshd>(net, "h1", key + ".pub");
    h2 = std::make_unique<NetnsSshd>(net, "h2", key + ".pub");
    nlohmann::json hosts = nlohmann::json::array();
    for (auto [name, host, price] : {std::tuple{"h1", h1.get(), 0.25}, {"h2", h2.get(), 0.5}})
      hosts.push_back({{"name", name}, {"address", host->address()}, {"user", "root"}, {"key_file", key},
                       {"cores", 1}, {"hourly_price", price}, {"work_dir", kRemoteWork},
                       {"power_off", "echo off >> " + dir.file(std::string(name) + ".power")}});
    nlohmann::json c = {{"providers", {{"ssh", {{"hosts", hosts}, {"connect_timeout_s", 3},
                                                {"server_alive_interval_s", 1}, {"server_alive_count_max", 3}}}}}};
    std::ofstream(config) << c.dump(2);
    chmod(config.c_str(), 0600);  // it names power_off commands
  }
};

std::string experiment(int limit, int epochs) {
  nlohmann::json body = {
      {"name", "ssh"},
      {"workload", {{"model", "mnist_cnn"}, {"dataset", "fashion-mnist"}, {"epochs", epochs}, {"limit", limit},
                    {"test_limit", 200}}},
      {"configs", {{{"provider", "ssh"}, {"instance_type", "h1"}}, {{"provider", "ssh"}, {"instance_type", "h2"}}}},
      {"repetitions", 1},
      {"billing", {"per_second_60s_min", "per_hour"}}};
  return body.dump();
}

nlohmann::json run_on(const nlohmann::json& exp, const std::string& host) {
  for (const auto& r : exp["runs"])
    if (r["config"]["instance_type"] == host) return r;
  FAIL("no run on " << host << " in " << exp.dump());
  return {};
}

}  // namespace

TEST_CASE("ssh: two hosts behind sshd in network namespaces each run a tiny training end to end") {
  SshLab lab;
  std::string offers = run_capture(std::string(TSUMD_BIN) + " offers --config " + lab.config + " --json");
  auto parsed = nlohmann::json::parse(offers, nullptr, false);
  REQUIRE(parsed.is_object());
  CHECK(parsed["errors"] == nlohmann::json::array());
  auto listed = parsed["offers"];
  REQUIRE(listed.is_array());
  REQUIRE(listed.size() == 2);
  CHECK(listed[1]["instance_type"] == "h2");
  CHECK(listed[1]["hourly_price"] == 0.5);
  CHECK(listed[1]["billing_rule"] == "step:1");

  DaemonProcess d(lab.dir.file("t.db"), {"--config", lab.config, "--max-concurrent", "2"});
  std::string admin = d.admin_token();
  d.start();
  auto api_offers = d.call("GET", "/v1/offers", admin).json();
  int ssh_offers = 0;
  for (const auto& o : api_offers["offers"]) ssh_offers += o["provider"] == "ssh";
  CHECK(ssh_offers == 2);

  auto created = d.call("POST", "/v1/experiments", admin, experiment(300, 1));
  REQUIRE(created.status == 201);
  std::string id = std::to_string(created.json()["id"].get<int64_t>());
  nlohmann::json exp;
  bool finished = eventually([&] {
    exp = d.call("GET", "/v1/experiments/" + id, admin).json();
    return exp["status"] == "done" || exp["status"] == "failed";
  }, std::chrono::seconds(300));
  INFO(exp.dump(2));
  INFO(d.log());
  REQUIRE(finished);
  REQUIRE(exp["status"] == "done");
  for (const char* host : {"h1", "h2"}) {
    CAPTURE(host);
    auto run = run_on(exp, host);
    CHECK(run["status"] == "done");
    REQUIRE(run["phases"].size() == 8);
    for (const char* p : {"startup", "install", "load_data", "start", "learn", "verify", "save", "poweroff"})
      CHECK(run["phases"][p].get<double>() >= 0);
    CHECK(run["phases"]["learn"].get<double>() > 0);
    // The agent fetched the bundle and the data set through the tunnel and uploaded its results the same way;
    // terminate ran the host's power_off command once.
    CHECK(run["metrics"]["install"]["method"] == "bundle");
    const std::string rid = std::to_string(run["id"].get<int64_t>());
    const nlohmann::json arts = d.call("GET", "/v1/runs/" + rid + "/artifacts", admin).json();
    CHECK(arts["artifacts"].size() == 3);
    CHECK(d.call("GET", "/v1/runs/" + rid + "/artifacts/model.pt", admin).body.size() > 100000);
    CHECK(run_capture("cat " + lab.dir.file(std::string(host) + ".power")) == "off");
  }
  // Hosts released, remote directories removed, nothing of the runs left running on the hosts but sshd.
  CHECK(fs::is_empty(lab.dir.file("t.db.state/ssh/hosts")));
  for (const auto* h : {lab.h1.get(), lab.h2.get()})
    CHECK((!fs::exists(h->root() + kRemoteWork) || fs::is_empty(h->root() + kRemoteWork)));
  CHECK(lab.h1->processes() == 1);
  CHECK(lab.h2->processes() == 1);
  CHECK(d.log().find("BEGIN OPENSSH PRIVATE KEY") == std::string::npos);
}

TEST_CASE("ssh: a host cut off mid-run fails its run with a reason in bounded time; the other host finishes") {
  SshLab lab;
  DaemonProcess d(lab.dir.file("t.db"), {"--config", lab.config, "--max-concurrent", "2"});
  std::string admin = d.admin_token();
  d.start();
  auto created = d.call("POST", "/v1/experiments", admin, experiment(3000, 2));
  REQUIRE(created.status == 201);
  std::string id = std::to_string(created.json()["id"].get<int64_t>());
  nlohmann::json exp;
  bool learning = eventually([&] {
    exp = d.call("GET", "/v1/experiments/" + id, admin).json();
    return run_on(exp, "h2")["status"] == "learning" || exp["status"] == "done" || exp["status"] == "failed";
  }, std::chrono::seconds(180));
  INFO(exp.dump(2));
  REQUIRE(learning);
  REQUIRE(run_on(exp, "h2")["status"] == "learning");
  lab.h2->cut();
  auto cut_at = std::chrono::steady_clock::now();

  // ServerAlive: 1 s x 3, then terminate gives up on the host after ConnectTimeout (3 s).
  bool failed = eventually([&] {
    exp = d.call("GET", "/v1/experiments/" + id, admin).json();
    return run_on(exp, "h2")["status"] == "failed";
  }, std::chrono::seconds(120));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - cut_at).count();
  std::string reason = run_on(exp, "h2")["reason"];
  MESSAGE("h2 failed " << seconds << " s after the cut: " << reason);
  INFO(exp.dump(2));
  INFO(d.log());
  REQUIRE(failed);
  CHECK(seconds < 60);  // the keepalive's bound, far below the run's deadline
  CHECK(reason.find("ssh host h2") != std::string::npos);
  CHECK(reason.find("connection") != std::string::npos);

  bool finished = eventually([&] {
    exp = d.call("GET", "/v1/experiments/" + id, admin).json();
    return run_on(exp, "h1")["status"] == "done" || run_on(exp, "h1")["status"] == "failed";
  }, std::chrono::seconds(300));
  REQUIRE(finished);
  CHECK(run_on(exp, "h1")["status"] == "done");
  // h2 is released with its cleanup pending: its agent could not be told to stop.
  CHECK(fs::exists(lab.dir.file("t.db.state/ssh/hosts/h2.cleanup")));
  CHECK_FALSE(fs::exists(lab.dir.file("t.db.state/ssh/hosts/h2.json")));
}

TEST_CASE("ssh: a host with Docker runs the docker runtime, pulling the image from a registry over the network") {
  require_ssh_test_preconditions();
  TestNetwork net;
  // The registry serves the test network too: the host's engine pulls from the bridge's address.
  DockerEnv env({.registry_listen = "0.0.0.0"});
  const std::string registry = net.listen_address() + ":" + std::to_string(env.registry_port());
  TempDir dir{"tsum-ssh-docker"};
  const std::string key = dir.file("id_test");
  REQUIRE(shell("ssh-keygen -q -t ed25519 -N '' -C tsum-test -f " + key) == 0);
  NetnsSshd host(net, "d1", key + ".pub", registry);
  nlohmann::json hosts = {{{"name", "d1"}, {"address", host.address()}, {"user", "root"}, {"key_file", key},
                           {"cores", 1}, {"hourly_price", 0.1}, {"work_dir", kRemoteWork}, {"docker", true}}};
  const std::string config = dir.file("tsum.json");
  std::ofstream(config) << nlohmann::json{{"providers", {{"ssh", {{"hosts", hosts}, {"connect_timeout_s", 3}}}}}}.dump();
  chmod(config.c_str(), 0600);

  DaemonProcess d(dir.file("t.db"), {"--config", config});
  const std::string admin = d.admin_token();
  d.start();
  const nlohmann::json body = {
      {"name", "ssh-docker"}, {"repetitions", 1}, {"billing", {"per_second_60s_min"}},
      {"workload", {{"limit", 300}, {"test_limit", 200}, {"image", registry + "/tsum-train:latest"}}},
      {"configs", {{{"provider", "ssh"}, {"instance_type", "d1"}, {"runtime", "docker"}}}}};
  auto created = d.call("POST", "/v1/experiments", admin, body.dump());
  INFO(created.body);
  REQUIRE(created.status == 201);
  const std::string id = std::to_string(created.json()["id"].get<int64_t>());
  nlohmann::json exp;
  bool finished = eventually([&] {
    exp = d.call("GET", "/v1/experiments/" + id, admin).json();
    return exp["status"] == "done" || exp["status"] == "failed";
  }, std::chrono::seconds(600));
  INFO(exp.dump(2));
  INFO(d.log());
  REQUIRE(finished);
  REQUIRE(exp["status"] == "done");
  const auto run = exp["runs"][0];
  CHECK(run["phases"].size() == 8);
  // install was a real pull on the host: every layer came over the network from the registry.
  CHECK(run["metrics"]["install"]["method"] == "pull");
  CHECK(run["metrics"]["install"]["image"] == registry + "/tsum-train:latest");
  CHECK(env.blob_bytes_served() > 50'000'000);
  const std::string rid = std::to_string(run["id"].get<int64_t>());
  CHECK(d.call("GET", "/v1/runs/" + rid + "/artifacts/model.pt", admin).body.size() > 100000);
  CHECK((!fs::exists(host.root() + kRemoteWork) || fs::is_empty(host.root() + kRemoteWork)));
}
