// The local provider's docker runtime through a real tsumd: the agent pulls the workload image from a registry
// on loopback (install, timed, bytes recorded), trains in a container pinned to the run's cores, and uploads
// its results; the same experiment's native run beside it. Needs what tests/docker needs (root, docker.io,
// docker-registry).
#include <doctest/doctest.h>

#include <cstdlib>
#include <optional>
#include <set>

#include "integration/workload_suite.h"
#include "support/docker_env.h"

using namespace tsum;
using namespace tsum::testing;
using nlohmann::json;

namespace {

// What a daemon started by a test hands its local agents for Docker (DockerEnv::env()), Debian's docker CLI first
// on PATH (the engine's own API version) and a DOCKER_CONFIG of the agents' own; all put back when it goes.
class AgentEnv {
 public:
  explicit AgentEnv(const DockerEnv& env) {
    for (const auto& [k, v] : env.env()) set(k, v);
    set("DOCKER_CONFIG", config_.path());
    const char* path = getenv("PATH");
    set("PATH", std::string("/usr/bin:") + (path ? path : ""));
  }
  ~AgentEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it)
      if (it->second) setenv(it->first.c_str(), it->second->c_str(), 1);
      else unsetenv(it->first.c_str());
  }
  AgentEnv(const AgentEnv&) = delete;
  AgentEnv& operator=(const AgentEnv&) = delete;

 private:
  void set(const std::string& k, const std::string& v) {
    const char* old = getenv(k.c_str());
    saved_.emplace_back(k, old ? std::optional<std::string>(old) : std::nullopt);
    setenv(k.c_str(), v.c_str(), 1);
  }
  TempDir config_;
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace

TEST_CASE("local runs natively and in docker: the warm-up before the run pulls the image, both train and upload "
          "results") {
  DockerEnv env({.registry_auth = true});
  // The image is on the registry only: it must be pulled.
  REQUIRE(env.docker("rmi " + env.image()).status == 0);
  AgentEnv agents(env);

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
    // The warm-up before each run pulled the image (or unpacked the bundle): the run found it there.
    const std::string method = run["metrics"]["install"]["method"];
    if (method == "present") {
      ++docker_runs;
      const auto logs = d.call("GET", "/v1/runs/" + std::to_string(run["id"].get<int64_t>()) + "/logs", admin).body;
      CHECK(logs.find("this machine's cache is warm: install (pull)") != std::string::npos);
      CHECK(run["metrics"]["install"]["image"] == env.image());
      CHECK(run["metrics"]["install"]["bytes"].get<double>() > 1e8);
    } else {
      CHECK(method == "cached");
    }
    CHECK(run["metrics"]["test_accuracy"].get<double>() > 0.3);
    auto arts = d.call("GET", "/v1/runs/" + std::to_string(run["id"].get<int64_t>()) + "/artifacts", admin);
    CHECK(arts.json()["artifacts"].size() == 3);
  }
  CHECK(docker_runs == 1);
}

namespace {

// A job in the workload image (a stock Debian root: sh, coreutils): it reads the data set, writes its marks to
// TSUM_EVENTS (some skipped, one line garbage) and files under /tsum/out, one in a subdirectory. Between its
// epochs and its learn end mark it waits for the test's release (DockerEnv::release).
std::string job_script(const std::string& token) {
  return R"(set -e
ls /tsum/data > /tsum/out/data-files.txt
echo '{"phase": "start", "mark": "end"}' > "$TSUM_EVENTS"
echo '{"event": "epoch", "epoch": 1, "loss": 0.5, "images_per_s": 100}' > "$TSUM_EVENTS"
echo 'not json at all' > "$TSUM_EVENTS"
echo '{"event": "epoch", "loss": 0.25, "images_per_s": 1.5e2, "note": "text is not a number"}' > "$TSUM_EVENTS"
)" + DockerEnv::wait_for_release(token) +
         R"(echo '{"phase": "learn", "mark": "end", "attrs": {"note": "done"}}' > "$TSUM_EVENTS"
mkdir -p /tsum/out/ckpt
echo "$GREETING" > /tsum/out/ckpt/weights.bin
if touch /tsum/data/x 2>/dev/null; then echo writable > /tsum/out/BAD; fi
)";
}

}  // namespace

TEST_CASE("a user's job runs in its image: data read-only at /tsum/data, its marks timed, /tsum/out uploaded") {
  DockerEnv env;
  AgentEnv agents(env);
  TempDir dir;
  DaemonProcess d(dir.file("t.db"));
  const std::string admin = d.admin_token();
  d.start();
  const std::string token = "job-" + std::to_string(getpid());
  const json body = {{"name", "job"}, {"repetitions", 1}, {"billing", {"per_second_60s_min"}},
                     {"workload", {{"image", env.image()}, {"command", {"sh", "-c", job_script(token)}},
                                   {"env", {{"GREETING", "hello 'quoted' $world"}}}, {"dataset", "fashion-mnist"}}},
                     {"configs", {{{"provider", "local"}, {"cores", 1}}}}};
  auto created = d.call("POST", "/v1/experiments", admin, body.dump());
  INFO(created.body);
  REQUIRE(created.status == 201);
  const std::string exp_path = "/v1/experiments/" + std::to_string(created.json()["id"].get<int64_t>());
  json exp;
  // Both epochs heard means learn has begun (the first epoch derived its begin mark); a second later the test
  // lets the job write its learn end mark, so learn lasts at least that second however slow the machine is.
  const bool epochs_heard = eventually([&] {
    exp = d.call("GET", exp_path, admin).json();
    if (!exp["runs"].is_array() || exp["runs"].empty()) return false;
    return d.call("GET", "/v1/runs/" + std::to_string(exp["runs"][0]["id"].get<int64_t>()), admin)
               .json()["epochs"].size() == 2;
  }, std::chrono::seconds(300));
  INFO(exp.dump(2));
  REQUIRE(epochs_heard);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  CHECK(env.release(token) >= 1);
  bool finished = eventually([&] {
    exp = d.call("GET", exp_path, admin).json();
    return exp["status"] == "done" || exp["status"] == "failed";
  }, std::chrono::seconds(300));
  INFO(exp.dump(2));
  INFO(d.log());
  REQUIRE(finished);
  REQUIRE(exp["status"] == "done");
  const json run = d.call("GET", "/v1/runs/" + std::to_string(exp["runs"][0]["id"].get<int64_t>()), admin).json();
  CHECK(run["workload"]["kind"] == "job");
  CHECK(run["phases"].size() == 8);
  // learn ran from its begin (derived at the first epoch) to the learn end mark, written after the release.
  CHECK(run["phases"]["learn"].get<double>() >= 0.98);  // /proc/uptime's hundredths on either end
  REQUIRE(run["epochs"].size() == 2);  // every number of the job's epoch lines, as tsum-train's reach the run
  CHECK(run["epochs"][0].value("loss", -1.0) == 0.5);
  CHECK(run["epochs"][0].value("images_per_s", -1.0) == 100);
  CHECK(run["epochs"][1].value("loss", -1.0) == 0.25);
  CHECK(run["epochs"][1].value("images_per_s", -1.0) == 150);
  CHECK(!run["epochs"][1].contains("note"));
  CHECK(run["metrics"]["marks"]["derived"] == json{"learn.begin", "verify.begin", "verify.end"});
  CHECK(run["unmarked"] == json{"verify"});  // no verify of its own: not shown as 0 s
  CHECK(run["phases"]["verify"].is_null());
  CHECK(run["t_sum"].is_number());
  CHECK(run["metrics"]["marks"]["malformed"] == 1);
  const std::string rid = std::to_string(run["id"].get<int64_t>());
  const json listing = d.call("GET", "/v1/runs/" + rid + "/artifacts", admin).json();
  std::set<std::string> names;
  for (const auto& a : listing["artifacts"]) names.insert(a["name"].get<std::string>());
  CHECK(names == std::set<std::string>{"ckpt/weights.bin", "data-files.txt", "events.jsonl", "samples.csv"});
  CHECK(d.call("GET", "/v1/runs/" + rid + "/artifacts/ckpt%2Fweights.bin", admin).body == "hello 'quoted' $world\n");
  CHECK(d.call("GET", "/v1/runs/" + rid + "/artifacts/data-files.txt", admin).body.find("train-images-idx3-ubyte") !=
        std::string::npos);
}

TEST_CASE("a job that fails fails its run naming the exit status and its output; bad jobs are 422s") {
  DockerEnv env;
  AgentEnv agents(env);
  TempDir dir;
  DaemonProcess d(dir.file("t.db"));
  const std::string admin = d.admin_token();
  d.start();
  auto job = [&](const json& workload) {
    return json{{"name", "job"}, {"repetitions", 1}, {"workload", workload},
                {"configs", {{{"provider", "local"}, {"cores", 1}}}}}.dump();
  };
  auto created = d.call("POST", "/v1/experiments", admin,
                        job({{"image", env.image()}, {"command", {"sh", "-c", "echo out of memory >&2; exit 3"}}}));
  REQUIRE(created.status == 201);
  json run;
  REQUIRE(eventually([&] {
    run = d.call("GET", "/v1/runs/1", admin).json();
    return run["status"] == "failed" || run["status"] == "done";
  }, std::chrono::seconds(300)));
  CHECK(run["status"] == "failed");
  CHECK(run["reason"].get<std::string>().find("the job exited with status 3: out of memory") != std::string::npos);
  CHECK(run["phases"]["verify"].is_null());  // it failed in learn: verify never ran, and is not timed
  for (const auto& [workload, names] : std::vector<std::pair<json, std::string>>{
           {{{"image", env.image()}, {"command", json::array()}}, "workload.command: must be a non-empty list"},
           {{{"command", {"true"}}}, "workload.image: a job's command runs in a container image"},
           {{{"image", "x|y"}, {"command", {"true"}}}, "workload.image: 'x|y' is not an image reference"},
           {{{"image", env.image()}, {"command", {"true"}}, {"optimizer", "adam"}}, "workload.optimizer: is tsum-train's"},
           {{{"image", env.image()}, {"command", {"true"}}, {"env", {{"TSUM_TOKEN", "x"}}}}, "workload.env.TSUM_TOKEN"},
           {{{"image", env.image()}, {"command", {"true"}}, {"dataset", "nope"}}, "there is no data set 'nope'"}}) {
    auto r = d.call("POST", "/v1/experiments", admin, job(workload));
    INFO(workload.dump() << " -> " << r.body);
    CHECK(r.status == 422);
    CHECK(r.body.find(names) != std::string::npos);
  }
}

TEST_CASE("in Docker too: every model on a data set of its format, the 8 optimizers, the inference sweep") {
  DockerEnv env;
  AgentEnv agents(env);
  Daemon x;
  const Runtime docker{env.image()};
  const auto t_sum = check_every_model(x, TSUM_TRAIN_BIN, docker);
  for (const auto& [model, seconds] : t_sum) MESSAGE(model << " in docker: t_sum " << seconds << " s");
  check_optimizers(x, docker);
  check_inference_sweep(x, docker);
}

TEST_CASE("the PyTorch-Python example job runs through tsum: its own marks, its checkpoint downloadable") {
  DockerEnv env;
  // examples/pytorch-mnist on the stock Debian root this suite imports (built once per engine and inputs), served
  // from the registry on loopback.
  const std::string image = env.push_example();
  REQUIRE(env.docker("rmi " + image).status == 0);  // the warm-up pulls it (its layers stay under the local tag)
  AgentEnv agents(env);
  Daemon x;
  const json body = {{"name", "pytorch"}, {"repetitions", 1}, {"billing", {"per_second_60s_min"}},
                     {"workload", {{"image", image}, {"dataset", "fashion-mnist"},
                                   {"command", {"python3", "/job/train.py", "--limit", "2000", "--test-limit", "500"}}}},
                     {"configs", {{{"provider", "local"}, {"cores", 1}}}}};
  const json exp = wait_experiment(x.d, x.admin, submit_experiment(x.d, x.admin, body), std::chrono::seconds(600));
  REQUIRE(exp["status"] == "done");
  const json run = x.d.call("GET", "/v1/runs/" + std::to_string(exp["runs"][0]["id"].get<int64_t>()), x.admin).json();
  // The warm-up before the run pulled the image; the run found it there.
  CHECK(run["metrics"]["install"]["method"] == "present");
  CHECK(x.d.call("GET", "/v1/runs/" + std::to_string(run["id"].get<int64_t>()) + "/logs", x.admin)
            .body.find("cache is warm: install (pull)") != std::string::npos);
  CHECK(run["metrics"]["marks"]["derived"] == json::array());  // it marks start, learn and verify itself
  CHECK(run["metrics"]["marks"]["malformed"] == 0);
  CHECK(run["epochs"].size() == 1);
  CHECK(run["phases"]["learn"].get<double>() > 0.5);
  MESSAGE("pytorch job t_sum " << run["t_sum"] << " s, learn " << run["phases"]["learn"] << " s");
  const std::string rid = std::to_string(run["id"].get<int64_t>());
  const json listing = x.d.call("GET", "/v1/runs/" + rid + "/artifacts", x.admin).json();
  std::set<std::string> names;
  for (const auto& a : listing["artifacts"]) names.insert(a["name"].get<std::string>());
  CHECK(names == std::set<std::string>{"events.jsonl", "metrics.json", "model.pt", "samples.csv"});
  auto model = x.d.call("GET", "/v1/runs/" + rid + "/artifacts/model.pt", x.admin);
  CHECK(model.status == 200);
  CHECK(model.body.size() > 1000000);  // the CNN's weights: 1.2 M parameters
  const json metrics = json::parse(x.d.call("GET", "/v1/runs/" + rid + "/artifacts/metrics.json", x.admin).body);
  CHECK(metrics["test_accuracy"].get<double>() > 0.5);
  env.docker("rmi " + image + " >/dev/null");
}
