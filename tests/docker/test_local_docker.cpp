// The local provider's docker runtime through a real tsumd: the agent pulls the workload image from a registry
// on loopback (install, timed, bytes recorded), trains in a container pinned to the run's cores, and uploads
// its results; the same experiment's native run beside it. Needs what tests/docker needs (root, docker.io,
// docker-registry).
#include <doctest/doctest.h>

#include <cstdlib>

#include "integration/daemon_process.h"
#include "support/docker_env.h"

using namespace tsum;
using namespace tsum::testing;
using nlohmann::json;

TEST_CASE("local runs natively and in docker: the image is pulled in install, both train and upload results") {
  DockerEnv env({.registry_auth = true});
  // The image is on the registry only: install must pull it.
  REQUIRE(env.docker("rmi " + env.image()).status == 0);
  for (const auto& [k, v] : env.env()) setenv(k.c_str(), v.c_str(), 1);
  const std::string path = getenv("PATH") ? getenv("PATH") : "";
  setenv("PATH", ("/usr/bin:" + path).c_str(), 1);  // Debian's docker CLI, the engine's own API version
  TempDir agent_config;
  setenv("DOCKER_CONFIG", agent_config.path().c_str(), 1);

  TempDir dir;
  DaemonProcess d(dir.file("t.db"));
  const std::string admin = d.admin_token();
  d.start();
  json body = json::parse(tiny_experiment(300, 200));
  body["workload"]["image"] = env.image();
  body["configs"] = {{{"provider", "local"}, {"cores", 1}, {"runtime", {"native", "docker"}}}};
  auto created = d.call("POST", "/v1/experiments", admin, body.dump());
  REQUIRE(created.status == 201);
  json exp;
  bool finished = eventually([&] {
    exp = d.call("GET", "/v1/experiments/" + std::to_string(created.json()["id"].get<int64_t>()), admin).json();
    return exp["status"] == "done" || exp["status"] == "failed";
  }, std::chrono::seconds(400));
  INFO(exp.dump(2));
  INFO(d.log());
  REQUIRE(finished);
  REQUIRE(exp["status"] == "done");
  REQUIRE(exp["runs"].size() == 2);
  int docker_runs = 0;
  for (const auto& run : exp["runs"]) {
    const std::string method = run["metrics"]["install"]["method"];
    if (method == "pull") {
      ++docker_runs;
      CHECK(run["metrics"]["install"]["image"] == env.image());
      CHECK(run["metrics"]["install"]["bytes"].get<double>() > 1e8);
    } else {
      CHECK(method == "bundle");
    }
    CHECK(run["metrics"]["test_accuracy"].get<double>() > 0.3);
    auto arts = d.call("GET", "/v1/runs/" + std::to_string(run["id"].get<int64_t>()) + "/artifacts", admin);
    CHECK(arts.json()["artifacts"].size() == 3);
  }
  CHECK(docker_runs == 1);
  for (const char* k : {"DOCKER_HOST", "TSUM_IMAGE", "TSUM_REGISTRY_USER", "TSUM_REGISTRY_PASSWORD", "DOCKER_CONFIG"})
    unsetenv(k);
  setenv("PATH", path.c_str(), 1);
}
