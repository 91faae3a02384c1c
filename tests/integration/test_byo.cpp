// Bring your own machine: a byo run waits in booting with a one-line join command; a guest of the stock Debian
// root (its own file system and network namespace, reaching the daemon only at its public URL) runs
// `curl -fsSL URL/v1/join/CODE | sh` and performs the whole run: 8 phases, artifacts uploaded, nothing left.
// A user's folder job runs the same way on a guest with Debian's python3-torch.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "integration/daemon_process.h"
#include "support/guest_net.h"

using namespace tsum;
using namespace tsum::testing;
using nlohmann::json;

namespace {

json wait_run(const DaemonProcess& d, const std::string& admin, int64_t run_id, std::chrono::seconds limit,
              const std::function<bool(const json&)>& until) {
  json run;
  bool ok = eventually([&] {
    run = d.call("GET", "/v1/runs/" + std::to_string(run_id), admin).json();
    return until(run);
  }, limit);
  INFO(run.dump(2));
  INFO(d.log());
  REQUIRE(ok);
  return run;
}

void check_eight_phases(const json& run) {
  for (const char* p : {"startup", "install", "load_data", "start", "learn", "verify", "save", "poweroff"}) {
    CAPTURE(p);
    CHECK(run["phases"][p].is_number());
  }
}

int64_t submit_byo(const DaemonProcess& d, const std::string& admin) {
  json body = json::parse(tiny_experiment(300, 200));
  body["configs"] = {{{"provider", "byo"}, {"instance_type", "any"}}};
  auto created = d.call("POST", "/v1/experiments", admin, body.dump());
  REQUIRE(created.status == 201);
  auto exp = d.call("GET", "/v1/experiments/" + std::to_string(created.json()["id"].get<int64_t>()), admin).json();
  return exp["runs"][0]["id"].get<int64_t>();
}

}  // namespace

TEST_CASE("byo: a stock Debian guest joins with one command and performs the whole run") {
  TestNetwork net;
  TempDir dir;
  DaemonProcess d(dir.file("t.db"), {}, net.listen_address());
  const std::string admin = d.admin_token();
  d.start({"--public-url", "http://" + net.listen_address() + ":{port}", "--insecure-agents"});
  CHECK(d.log().find("warning: agents reach this daemon over plain HTTP") != std::string::npos);

  // A first run: the test itself fetches the join script (as a machine would), then the run is cancelled. The
  // code works once; the token in the script is refused once the run is over; the script names no daemon path.
  const int64_t first = submit_byo(d, admin);
  json run = wait_run(d, admin, first, std::chrono::seconds(30), [](const json& r) { return r["join"].is_object(); });
  CHECK(run["status"] == "booting");
  const std::string command = run["join"]["command"];
  std::smatch m;
  REQUIRE(std::regex_match(command, m, std::regex(R"(curl -fsSL (http://[0-9.]+:[0-9]+)(/v1/join/[0-9a-f]{32}) \| sh)")));
  const std::string join_path = m[2];
  auto script = d.call("GET", join_path, "");
  REQUIRE(script.status == 200);
  CHECK(d.call("GET", join_path, "").status == 409);
  CHECK(script.body.find(dir.path().string()) == std::string::npos);
  CHECK(script.body.find("TSUM_TRAIN_SRC") == std::string::npos);
  CHECK(script.body.find("/v1/blobs/") != std::string::npos);
  std::smatch tok;
  REQUIRE(std::regex_search(script.body, tok, std::regex("TSUM_TOKEN='(tsum_[0-9a-f]+)'")));
  const std::string token = tok[1];
  const std::string event = R"({"phase":"install","mark":"begin","mono_s":1})";
  CHECK(d.call("POST", "/v1/runs/" + std::to_string(first) + "/events", token, event).status == 200);
  REQUIRE(d.call("DELETE", "/v1/runs/" + std::to_string(first), admin).status == 202);
  // What the join script does after the agent's clean-up: report it, which ends the run's poweroff.
  CHECK(eventually([&] { return d.call("POST", join_path + "/left", "").status == 204; }, std::chrono::seconds(120)));
  wait_run(d, admin, first, std::chrono::seconds(120), [](const json& r) { return r["status"] == "cancelled"; });
  CHECK(d.call("POST", "/v1/runs/" + std::to_string(first) + "/events", token, event).status == 401);

  // The real one: a guest machine joins and does it all.
  const int64_t second = submit_byo(d, admin);
  run = wait_run(d, admin, second, std::chrono::seconds(30), [](const json& r) { return r["join"].is_object(); });
  auto guest = net.boot_shell("byo1", run["join"]["command"].get<std::string>() + " > /root/join.log 2>&1");
  run = wait_run(d, admin, second, std::chrono::seconds(300), [](const json& r) {
    return r["status"] == "done" || r["status"] == "failed" || r["status"] == "cancelled";
  });
  REQUIRE(run["status"] == "done");
  check_eight_phases(run);
  CHECK(run["metrics"]["install"]["method"] == "bundle");
  CHECK(run["metrics"]["test_accuracy"].get<double>() > 0.3);
  auto arts = d.call("GET", "/v1/runs/" + std::to_string(second) + "/artifacts", admin).json()["artifacts"];
  CHECK(arts.size() == 3);
  auto model = d.call("GET", "/v1/runs/" + std::to_string(second) + "/artifacts/model.pt", admin);
  CHECK(model.status == 200);
  CHECK(model.body.size() > 100000);
  // The machine kept nothing of the run, and the join script ended there.
  const auto root = std::filesystem::path(net.machine_dir("byo1")) / "root";
  CHECK(eventually([&] { return !std::filesystem::exists(root / "var/lib/tsum" / run["instance"]["id"].get<std::string>()); },
                   std::chrono::seconds(120)));
}

// A user's folder job, as a new user brings it: examples/pytorch-mnist (train.py, requirements.txt, a setup that
// checks them) with `tsumd experiment create -f`, on a stock Debian guest that has python3-torch and nothing of
// tsum's, sharing only the network with the daemon. Its output is followed while it prints.
TEST_CASE("byo: a folder job with a PyTorch-Python run on a stock Debian guest, its output followed live") {
  TestNetwork net;
  TempDir dir;
  DaemonProcess d(dir.file("t.db"), {}, net.listen_address());
  const std::string admin = d.admin_token();
  d.start({"--public-url", "http://" + net.listen_address() + ":{port}", "--insecure-agents"});

  // The example's own spec, pointed at a byo machine: the client packs the folder and uploads it.
  const std::string example = std::string(TSUM_SOURCE_DIR) + "/examples/pytorch-mnist";
  std::ofstream(dir.file("job.yaml")) << "name: byo-folder\n"
                                         "workload:\n"
                                         "  workdir: " << example << "\n"
                                         "  setup: /usr/bin/python3 check_requirements.py\n"
                                         "  run: PYTHONPATH=.deps /usr/bin/python3 train.py --epochs 1 --limit 4000 --test-limit 1000\n"
                                         "  dataset: fashion-mnist\n"
                                         "configs: [{provider: byo, instance_type: any}]\n"
                                         "repetitions: 1\n";
  const std::string created = run_capture("env TSUM_URL=" + d.url() + " TSUM_TOKEN=" + admin + " " + TSUMD_BIN +
                                          " experiment create -f " + dir.file("job.yaml") + " 2>&1");
  INFO(created);
  REQUIRE(created.find("experiment 1 created") != std::string::npos);
  CHECK(created.find("workdir " + example + ": ") != std::string::npos);
  CHECK(created.find(", uploaded as sha256:") != std::string::npos);

  json run = wait_run(d, admin, 1, std::chrono::seconds(30), [](const json& r) { return r["join"].is_object(); });
  auto guest = net.boot_shell("torch1", run["join"]["command"].get<std::string>() + " > /root/join.log 2>&1",
                              kGuestTorchImage);

  // Followed as it runs: the job's prints arrive while the run is not over.
  std::string seen;
  int64_t after = 0;
  bool live = eventually([&] {
    auto page = d.call("GET", "/v1/runs/1/logs?wait=10&after=" + std::to_string(after), admin);
    if (page.status != 200) return false;
    const json j = page.json();
    for (const auto& l : j["lines"]) seen += l["text"].get<std::string>() + "\n";
    after = j["after"].get<int64_t>();
    return seen.find("epoch 1 step 20: loss") != std::string::npos && !j["done"].get<bool>();
  }, std::chrono::seconds(600));
  INFO(seen);
  INFO(d.log());
  REQUIRE(live);
  CHECK(seen.find("have torch ") != std::string::npos);  // setup, in install, found Debian's python3-torch
  CHECK(seen.find("setup done") != std::string::npos);

  run = wait_run(d, admin, 1, std::chrono::seconds(600), [](const json& r) {
    return r["status"] == "done" || r["status"] == "failed" || r["status"] == "cancelled";
  });
  REQUIRE(run["status"] == "done");
  check_eight_phases(run);
  CHECK(run["metrics"]["install"]["setup"] == "ran");
  CHECK(run["metrics"]["install"]["workdir"]["bytes"].get<int64_t>() > 1000);
  CHECK(run["metrics"]["marks"]["derived"] == json::array());  // train.py writes every mark itself
  CHECK(run["metrics"]["marks"]["exit_status"] == 0);
  auto metrics = d.call("GET", "/v1/runs/1/artifacts/metrics.json", admin);
  REQUIRE(metrics.status == 200);
  CHECK(json::parse(metrics.body)["test_accuracy"].get<double>() > 0.5);
  CHECK(d.call("GET", "/v1/runs/1/artifacts/model.pt", admin).status == 200);
  // Every line the daemon holds, in order and once: the tail came after the head.
  std::string all;
  after = 0;
  for (;;) {
    const json j = d.call("GET", "/v1/runs/1/logs?after=" + std::to_string(after), admin).json();
    if (j["lines"].empty()) break;
    for (const auto& l : j["lines"]) all += l["text"].get<std::string>() + "\n";
    after = j["after"].get<int64_t>();
  }
  CHECK(all.find("setup done") < all.find("epoch 1: mean loss"));
  CHECK(all.find("epoch 1: mean loss") < all.find("test accuracy"));
}
