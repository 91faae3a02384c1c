// Docker for real: the private engine's life cycle (scripts/docker-engine.sh), the images (tsum-base:bookworm,
// tsum-train:latest), a private registry on loopback: push, pull after the image is gone, run without a network,
// and a registry with credentials. See tests/support/docker_env.h and docs/docker.md.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "support/docker_env.h"
#include "support/temp_dir.h"

namespace tsum::testing {
namespace {

using std::chrono::seconds;
using docker_env_detail::quote;
using docker_env_detail::run;

std::string engine_script() { return std::string("sh ") + quote(TSUM_SOURCE_DIR "/scripts/docker-engine.sh") + " "; }

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool process_runs(const std::string& pid) {
  return !pid.empty() && std::filesystem::exists("/proc/" + pid) &&
         slurp("/proc/" + pid + "/stat").find(") Z ") == std::string::npos;
}

bool mounts_under(const std::string& dir) { return slurp("/proc/mounts").find(" " + dir + "/") != std::string::npos; }

// Blob uploads the registry completed (its access log: PUT .../blobs/uploads/UUID?digest=...), any repository.
int uploads(const DockerEnv& env) {
  std::istringstream log(slurp(env.registry_dir() + "/registry.log"));
  int n = 0;
  for (std::string line; std::getline(log, line);)
    n += line.find("\"PUT /v2/") != std::string::npos && line.find("/blobs/uploads/") != std::string::npos;
  return n;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

TEST_CASE("docker-engine.sh starts a private engine once and stops it cleanly") {
  if (geteuid() != 0) FAIL("the docker suite needs root (it starts dockerd)");
  if (access("/usr/sbin/dockerd", X_OK) != 0) FAIL("/usr/sbin/dockerd is missing: install docker.io");
  TempDir dir("tsum-engine");
  const std::string state = dir.path().string();

  // vfs, the driver that works everywhere (the fixture's engine below takes overlay2 where it mounts).
  auto t0 = std::chrono::steady_clock::now();
  DockerCommand start = run("TSUM_DOCKER_STORAGE_DRIVER=vfs " + engine_script() + "start " + quote(state), seconds(180));
  REQUIRE_MESSAGE(start.status == 0, start.output);
  MESSAGE("engine up in " << seconds_since(t0) << " s");
  const std::string host = "unix://" + state + "/docker.sock";
  CHECK(start.output == host);
  const std::string pid = slurp(state + "/dockerd.pid");
  CHECK(process_runs(pid));
  CHECK(mounts_under(state));  // dockerd bind-mounts its data-root; stop must undo it

  DockerCommand info = run("DOCKER_HOST=" + quote(host) + " /usr/bin/docker info --format '{{.Driver}} {{.DockerRootDir}}'",
                           seconds(30));
  CHECK(info.status == 0);
  CHECK(info.output == "vfs " + state + "/data");

  // Idempotent: a second start finds it answering and leaves it alone.
  DockerCommand again = run(engine_script() + "start " + quote(state), seconds(60));
  CHECK(again.status == 0);
  CHECK(again.output == host);
  CHECK(slurp(state + "/dockerd.pid") == pid);

  DockerCommand stop = run(engine_script() + "stop " + quote(state), seconds(120));
  CHECK_MESSAGE(stop.status == 0, stop.output);
  CHECK_FALSE(process_runs(pid));
  CHECK_FALSE(std::filesystem::exists(state + "/docker.sock"));
  CHECK_FALSE(std::filesystem::exists(state + "/dockerd.pid"));
  CHECK_FALSE(mounts_under(state));
  CHECK(run(engine_script() + "status " + quote(state), seconds(30)).status != 0);
  CHECK(run(engine_script() + "stop " + quote(state), seconds(30)).status == 0);  // idempotent
}

TEST_CASE("the workload image goes through a registry: push, pull once it is gone, run without a network") {
  auto t0 = std::chrono::steady_clock::now();
  DockerEnv env;
  MESSAGE("engine " << env.docker_host() << ", images and push ready in " << seconds_since(t0) << " s");
  if (!env.engine_state().empty()) {  // the private engine runs the driver it chose (docker-engine.sh)
    std::string driver = slurp(env.engine_state() + "/driver");
    while (!driver.empty() && driver.back() == '\n') driver.pop_back();
    CHECK((driver == "overlay2" || driver == "vfs"));
    CHECK(env.docker("info --format '{{.Driver}}'").output == driver);
    MESSAGE("storage driver " << driver);
  }
  const std::string image = env.image();
  CHECK(image == env.registry() + "/tsum-train:latest");

  // The images exist, and the workload carries the current bundle.
  CHECK(env.docker(std::string("image inspect ") + DockerEnv::kBaseImage + " >/dev/null").status == 0);
  DockerCommand label =
      env.docker(std::string("image inspect -f '{{index .Config.Labels \"org.tsum.bundle-sha256\"}}' ") +
                 DockerEnv::kLocalImage);
  DockerCommand sum = run("sha256sum " + quote(TSUM_BUILD_DIR "/bundle/tsum-bundle.tar.gz") + " | cut -d' ' -f1",
                          seconds(60));
  CHECK(label.status == 0);
  CHECK(label.output == sum.output);
  const std::string id = env.docker("image inspect -f '{{.Id}}' " + image).output;
  CHECK(id.starts_with("sha256:"));

  // What the registry holds: the manifest's layers (compressed sizes); the last one is the bundle.
  DockerCommand manifest =
      run("curl -fsS -H 'Accept: application/vnd.docker.distribution.manifest.v2+json' http://" + env.registry() +
              "/v2/tsum-train/manifests/latest",
          seconds(30));
  REQUIRE_MESSAGE(manifest.status == 0, manifest.output);
  auto m = nlohmann::json::parse(manifest.output);
  REQUIRE(m["layers"].size() >= 2);
  long long layers = 0;
  for (const auto& layer : m["layers"]) layers += layer["size"].get<long long>();
  const long long bundle_layer = m["layers"].back()["size"].get<long long>();
  const long long config = m["config"]["size"].get<long long>();
  CHECK(bundle_layer > 1'000'000);

  // Remove every name of the image, so the engine has to download its bundle layer again.
  DockerCommand tags = env.docker("image inspect -f '{{join .RepoTags \" \"}}' " + id);
  REQUIRE(tags.status == 0);
  REQUIRE_MESSAGE(env.docker("rmi " + tags.output).status == 0, tags.output);
  CHECK(env.docker("image inspect " + id + " >/dev/null").status != 0);

  const long long served_before = env.blob_bytes_served();
  auto t_pull = std::chrono::steady_clock::now();
  DockerCommand pull = env.docker("pull " + image, seconds(600));
  const double pull_s = seconds_since(t_pull);
  REQUIRE_MESSAGE(pull.status == 0, pull.output);
  const long long pulled = env.blob_bytes_served() - served_before;
  MESSAGE("pulled " << pulled << " bytes in " << pull_s << " s (manifest: " << layers << " bytes of layers, bundle layer "
                    << bundle_layer << ", config " << config << ")");
  CHECK(pulled >= bundle_layer + config);
  CHECK(pulled <= layers + config);
  // Content addressed: the same image came back. Give it its local name again (the cache for later runs).
  CHECK(env.docker("image inspect -f '{{.Id}}' " + image).output == id);
  CHECK(env.docker(std::string("tag ") + image + " " + DockerEnv::kLocalImage).status == 0);

  DockerCommand help = env.docker("run --rm --network none " + image + " --help", seconds(120));
  CHECK(help.status == 0);
  CHECK(help.output.find("usage: tsum-train") != std::string::npos);
  DockerCommand net = env.docker("run --rm --network none --entrypoint /bin/sh " + image + " -c 'ls /sys/class/net'");
  CHECK(net.output == "lo");
  // tsum-gpustat is in the image too: 0 with a GPU, 3 without one (never 126/127: missing or not runnable).
  DockerCommand gpustat = env.docker("run --rm --network none --entrypoint tsum-gpustat " + image);
  CHECK((gpustat.status == 0 || gpustat.status == 3));

  // A push uploads what the registry lacks: an image with one new layer on top sends that layer and its config
  // (the registry may have been seeded with the workload's layers, DockerEnvOptions::seed_registry).
  TempDir context("tsum-docker-ctx");
  std::ofstream(context.file("Dockerfile")) << "FROM " << image << "\nCOPY noise /noise\n";
  run("head -c 1000000 /dev/urandom > " + quote(context.file("noise")), seconds(30));
  const std::string derived = env.registry() + "/tsum-train-derived:test";
  REQUIRE(env.docker("build -q -t " + derived + " " + quote(context.path().string()), seconds(300)).status == 0);
  const int uploads_before = uploads(env);
  DockerCommand push = env.docker("push " + derived, seconds(300));
  CHECK_MESSAGE(push.status == 0, push.output);
  CHECK(push.output.find("Pushed") != std::string::npos);
  CHECK(uploads(env) - uploads_before >= 2);  // the new layer and the config
  CHECK(env.docker("rmi " + derived + " >/dev/null").status == 0);

  const std::string state = env.engine_state();
  const std::string pid = state.empty() ? "" : slurp(state + "/dockerd.pid");
  env.stop();
  if (env.stopped_engine()) {
    CHECK_FALSE(process_runs(pid));
    CHECK_FALSE(std::filesystem::exists(state + "/docker.sock"));
    CHECK_FALSE(mounts_under(state));
  }
  MESSAGE("engine " << std::string(env.started_engine() ? "started" : "found running") << ", "
                    << std::string(env.stopped_engine() ? "stopped" : "left running") << "; whole case "
                    << seconds_since(t0) << " s");
}

TEST_CASE("a registry with credentials refuses anonymous pulls and serves a logged-in engine") {
  auto t0 = std::chrono::steady_clock::now();
  DockerEnv env({.registry_auth = true});
  MESSAGE("ready in " << seconds_since(t0) << " s");
  REQUIRE_FALSE(env.registry_user().empty());
  const std::string v2 = "http://" + env.registry() + "/v2/";
  CHECK(run("curl -s -o /dev/null -w '%{http_code}' " + v2, seconds(30)).output == "401");
  CHECK(run("curl -s -o /dev/null -w '%{http_code}' -u " + quote(env.registry_user() + ":" + env.registry_password()) +
                " " + v2,
            seconds(30))
            .output == "200");
  CHECK(run("curl -s -o /dev/null -w '%{http_code}' -u " + quote(env.registry_user() + ":wrong") + " " + v2, seconds(30))
            .output == "401");

  // An engine client without the login is refused; with it (docker_config()) the pull works.
  TempDir empty("tsum-docker-config");
  DockerCommand anonymous = run("DOCKER_HOST=" + quote(env.docker_host()) + " DOCKER_CONFIG=" +
                                    quote(empty.path().string()) + " /usr/bin/docker pull " + env.image(),
                                seconds(120));
  CHECK(anonymous.status != 0);
  CHECK_MESSAGE((anonymous.output.find("no basic auth credentials") != std::string::npos ||
                 anonymous.output.find("unauthorized") != std::string::npos),
                anonymous.output);
  DockerCommand pull = env.docker("pull " + env.image(), seconds(300));
  CHECK_MESSAGE(pull.status == 0, pull.output);
}

}  // namespace
}  // namespace tsum::testing
