// tsumd against the five fake clouds over HTTPS: offers through each adapter's price API, a whole experiment
// on each with the agent standing in for the VM, and the leak guard (a crash between create and its commit,
// a lost create answer, a delete that fails three times, kill -9), each checked on every cloud.
#include <doctest/doctest.h>

#include <signal.h>

#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "billing/prices/catalog.h"
#include "integration/cloud_rig.h"
#include "integration/daemon_process.h"
#include "integration/fake_clouds.h"
#include "support/docker_env.h"
#include "support/guest_net.h"

using namespace tsum;
using namespace tsum::testing;
using nlohmann::json;

namespace {

std::string today_utc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

// Nothing secret in what tsumd printed: the fake's secret, or any private key material.
void check_no_secret(const FakeCloud& fake, const Ran& r) {
  for (const auto* text : {&r.out, &r.err}) {
    if (!fake.secret().empty()) CHECK(text->find(fake.secret()) == std::string::npos);
    CHECK(text->find("PRIVATE KEY") == std::string::npos);
  }
}

}  // namespace

TEST_CASE("tsumd offers --provider P: priced offers from each fake cloud's price API, and a refreshed catalog") {
  for (const auto& cloud : kClouds) {
    CAPTURE(cloud);
    TempDir dir("tsum-offers");
    TestTls tls;
    FakeCloud fake(cloud, dir, tls);
    const std::string config = write_cloud_config(dir, cloud, fake.section());
    const std::string catalog_file = dir.file("catalog.json");
    auto r = run_tsumd(dir, "offers --config " + config + " --provider " + cloud + " --json --catalog-out " + catalog_file);
    INFO(r.err);
    REQUIRE(r.rc == 0);
    check_no_secret(fake, r);
    auto listed = json::parse(r.out);
    CHECK(listed["errors"] == json::array());
    auto offers = listed["offers"];
    REQUIRE(offers.is_array());
    REQUIRE(offers.size() >= 2);
    for (const auto& o : offers) {
      CHECK(o["provider"] == cloud);
      CHECK(o["vcpus"].get<int>() > 0);
      CHECK(o["hourly_price"].get<double>() > 0);
    }

    std::ifstream in(catalog_file);
    auto catalog = billing::parse_catalog(std::string{std::istreambuf_iterator<char>(in), {}});
    REQUIRE(catalog);
    CHECK(catalog->provider == cloud);
    for (const auto& o : offers) {
      const auto* c = catalog->find(o["instance_type"].get<std::string>());
      REQUIRE(c != nullptr);
      CHECK(c->hourly == doctest::Approx(o["hourly_price"].get<double>()));
      CHECK(c->as_of == today_utc());  // the refresh's date, not the shipped catalog's
    }

    // The table form lists the same offers.
    auto table = run_tsumd(dir, "offers --config " + config);
    REQUIRE(table.rc == 0);
    CHECK(table.out.find(offers[0]["instance_type"].get<std::string>()) != std::string::npos);
  }
}

TEST_CASE("tsumd offers against a cloud that refuses the credentials fails naming the cloud, without the secret") {
  TempDir dir("tsum-offers-auth");
  TestTls tls;
  FakeCloud fake("hetzner", dir, tls);
  const std::string wrong = dir.file("wrong-token");
  std::ofstream(wrong) << "not-" << fake.secret() << "\n";
  chmod(wrong.c_str(), 0600);
  fake.section()["token_file"] = wrong;
  auto r = run_tsumd(dir, "offers --config " + write_cloud_config(dir, "hetzner", fake.section()) + " --provider hetzner");
  CHECK(r.rc == 1);
  CHECK(r.err.find("hetzner: ") != std::string::npos);
  CHECK(r.err.find(fake.secret()) == std::string::npos);
  CHECK(r.out.find(fake.secret()) == std::string::npos);

  auto none = run_tsumd(dir, "offers --config " + write_cloud_config(dir, "hetzner", fake.section()) + " --provider aws");
  CHECK(none.rc == 2);
  CHECK(none.err.find("configures no 'aws'") != std::string::npos);
}

// ---- experiments on the fake clouds, the agent standing in for the VM (tests/fakes/guest) ----

namespace {

// One rig per cloud, all at once: they share nothing (each has its network, fake and daemon), so the clouds' cases
// wait on their machines together rather than one cloud after another. faults(cloud): the fake's faults.
struct CloudRigs {
  template <class Faults>
  explicit CloudRigs(Faults faults) {
    for (const auto& cloud : kClouds) {
      rigs.push_back(std::make_unique<CloudRig>(cloud, faults(cloud)));
      admins.push_back(rigs.back()->daemon.admin_token());
    }
  }
  // Waits until pred(i) holds for every rig i, or limit passes.
  template <class Pred>
  bool each(Pred pred, std::chrono::seconds limit) {
    return eventually([&] {
      for (std::size_t i = 0; i < rigs.size(); ++i)
        if (!pred(i)) return false;
      return true;
    }, limit);
  }
  std::vector<std::unique_ptr<CloudRig>> rigs;
  std::vector<std::string> admins;
};

// Waits until the run the rig's daemon (started again on the same database) found is terminal and its machine
// gone: failed, with what was measured before kept. Returns the run.
json settle(CloudRig& rig, const std::string& admin) {
  bool clean = eventually([&] { return rig.guest_processes() == 0 && is_terminal(rig.run(admin)); },
                          std::chrono::seconds(60));
  auto run = rig.run(admin);
  INFO(run.dump(2));
  CHECK(clean);
  CHECK(run["status"] == "failed");
  CHECK(run["phases"]["install"].get<double>() >= 0);  // what was measured before is kept
  return run;
}

json restart_and_settle(CloudRig& rig, const std::string& admin) {
  rig.daemon.start();
  return settle(rig, admin);
}

}  // namespace

TEST_CASE("an experiment on each fake cloud runs end to end; a lost create answer and a delete refused three times "
          "leave one instance, terminated") {
  CloudRigs all([](const std::string& cloud) {
    const auto calls = calls_of(cloud);
    return calls.create + ":lost," + calls.remove + ":503:3";
  });
  for (std::size_t i = 0; i < all.rigs.size(); ++i) {
    all.rigs[i]->daemon.start();
    REQUIRE(all.rigs[i]->daemon.call("POST", "/v1/experiments", all.admins[i], all.rigs[i]->experiment(300)).status ==
            201);
  }
  all.each([&](std::size_t i) { return is_terminal(all.rigs[i]->run(all.admins[i])); }, std::chrono::seconds(300));
  for (std::size_t i = 0; i < all.rigs.size(); ++i) {
    CloudRig& rig = *all.rigs[i];
    const std::string cloud = rig.fake.name(), admin = all.admins[i];
    CAPTURE(cloud);
    auto run = rig.run(admin);
    INFO(run.dump(2));
    INFO(rig.daemon.log());
    INFO(rig.fake.log());
    REQUIRE(is_terminal(run));
    CHECK(run["status"] == "done");
    for (const char* phase : {"startup", "install", "load_data", "start", "learn", "verify", "save", "poweroff"})
      CHECK(run["phases"][phase].get<double>() >= 0);
    CHECK(run["t_sum"].get<double>() > 0);
    CHECK(run["instance"]["provider"] == cloud);
    CHECK(guest_boots(rig.fake) == 1);  // the lost answer was adopted, not created again
    CHECK(eventually([&] { return rig.guest_processes() == 0; }, std::chrono::seconds(120)));
    check_no_secret(rig.fake, {0, rig.daemon.log(), run.dump()});
  }
}

TEST_CASE("a docker run on a fake cloud: the payload's docker.io engine pulls the image from a registry over the "
          "network") {
  // The guests boot the stock root with docker.io in it: a fake guest reaches no mirror to install it from.
  DockerEnv env({.registry_listen = "0.0.0.0"});
  for (const std::string cloud : {"aws", "azure"}) {
    CAPTURE(cloud);
    CloudRig rig(cloud, "", kGuestSshImage, env.registry_port());
    const std::string admin = rig.daemon.admin_token();
    rig.daemon.start();
    const std::string image = rig.registry + "/tsum-train:latest";
    const long long served = env.blob_bytes_served();
    auto created = rig.daemon.call("POST", "/v1/experiments", admin, rig.experiment(300, image));
    INFO(created.body);
    REQUIRE(created.status == 201);
    bool finished = eventually([&] { return is_terminal(rig.run(admin)); }, std::chrono::seconds(300));
    auto run = rig.run(admin);
    INFO(run.dump(2));
    INFO(rig.daemon.log());
    INFO(rig.fake.log());
    REQUIRE(finished);
    CHECK(run["status"] == "done");
    CHECK(run["phases"].size() == 8);
    CHECK(run["metrics"]["install"]["method"] == "pull");
    CHECK(run["metrics"]["install"]["image"] == image);
    CHECK(env.blob_bytes_served() - served > 50'000'000);  // every layer, over the test network
    CHECK(eventually([&] { return rig.guest_processes() == 0; }, std::chrono::seconds(120)));
  }
}

TEST_CASE("two nodes on a fake cloud: machines that share only the network meet through the daemon and train "
          "together") {
  CloudRig rig("aws", "");
  const std::string admin = rig.daemon.admin_token();
  rig.daemon.start();
  json body = json::parse(rig.experiment(1024));
  body["configs"][0]["nodes"] = 2;
  body["configs"][0]["dist"] = "ring";
  body["workload"]["model"] = "mnist_mlp";
  auto created = rig.daemon.call("POST", "/v1/experiments", admin, body.dump());
  INFO(created.body);
  REQUIRE(created.status == 201);
  bool finished = eventually([&] { return is_terminal(rig.run(admin)); }, std::chrono::seconds(300));
  auto run = rig.run(admin);
  INFO(run.dump(2));
  INFO(rig.daemon.log());
  INFO(rig.fake.log());
  REQUIRE(finished);
  CHECK(run["status"] == "done");
  CHECK(run["nodes"] == 2);
  CHECK(run["instance"]["data"]["nodes"].size() == 2);
  CHECK(guest_boots(rig.fake) == 2);
  CHECK(run["node_phases"][1]["phases"]["learn"].get<double>() > 0);
  CHECK(run["metrics"]["test_accuracy"].get<double>() > 0.3);
  CHECK(eventually([&] { return rig.guest_processes() == 0; }, std::chrono::seconds(120)));
}

// The hook each guest runs as it boots once `dir`/delay exists: 5 ms more on every packet the guest sends, so a round
// trip between two guests takes 10 ms more. tc's netem where the kernel has it; else (CONFIG_NET_SCH_NETEM unset,
// as here: "Specified qdisc kind is unknown") the same delay from an NFQUEUE rule and tsum-nfq-delay in the guest's
// network namespace. Each guest's way is noted in dir/shaped.
std::string delay_hook(const TempDir& dir) {
  const std::string d = dir.path().string();
  std::ofstream(dir.file("hook.sh")) << "set -u\nD='" << d << "'\n"
      "[ -e \"$D/delay\" ] || exit 0\n"
      "ns=$TSUM_GUEST_NETNS id=$TSUM_GUEST_ID\n"
      "if ip netns exec \"$ns\" tc qdisc add dev eth0 root netem delay 5ms 2>\"$D/netem-$id.err\"; then\n"
      "  echo \"$id netem\" >> \"$D/shaped\"; exit 0\nfi\n"
      "setsid ip netns exec \"$ns\" '" NFQ_DELAY_BIN "' 0 5 > \"$D/nfq-$id.out\" 2>&1 < /dev/null &\n"
      "echo $! > \"$D/nfq-$id.pid\"\n"
      "i=0; until grep -q ready \"$D/nfq-$id.out\"; do\n"
      "  i=$((i + 1)); [ $i -gt 600 ] && { echo 'tsum-nfq-delay did not start'; cat \"$D/nfq-$id.out\"; exit 1; }\n"
      "  sleep 0.05\ndone\n"
      "ip netns exec \"$ns\" iptables -I OUTPUT -j NFQUEUE --queue-num 0 || exit 1\n"
      "echo \"$id nfqueue (netem: $(cat \"$D/netem-$id.err\"))\" >> \"$D/shaped\"\n";
  return "sh '" + dir.file("hook.sh") + "'";
}

// Stops the delayers delay_hook started (they live in the guests' network namespaces, not in their processes).
struct Delayers {
  const TempDir& dir;
  ~Delayers() {
    std::error_code ec;
    for (const auto& f : std::filesystem::directory_iterator(dir.path(), ec))
      if (f.path().extension() == ".pid") {
        std::ifstream in(f.path());
        pid_t pid = 0;
        if (in >> pid && pid > 0) ::kill(pid, SIGTERM);
      }
  }
};

json level_at(const json& run, int concurrency) {
  for (const auto& l : run["metrics"]["serving"])
    if (l["concurrency"] == concurrency) return l;
  FAIL("no level at concurrency " << concurrency << " in " << run.dump());
  return nullptr;
}

TEST_CASE("serving on a fake cloud: the server and its load client share only the network; 5 ms more each way "
          "raises p50 at concurrency 1 by about 10 ms, and more in flight brings the throughput back") {
  TempDir shaping("tsum-shape");
  Delayers delayers{shaping};
  CloudRig rig("aws", "", kGuestImage, 0, false, delay_hook(shaping));
  const std::string admin = rig.daemon.admin_token();
  rig.daemon.start();
  json body = json::parse(rig.experiment(100));
  // A server whose every request takes 20 ms (model delay, one request a batch): at concurrency 1 a request's
  // latency is that plus the round trip; with 8 in flight the server is always busy, 50 requests/s.
  body["workload"] = {{"kind", "serve"}, {"model", "delay"}, {"service_ms", 20}, {"max_batch", 1},
                      {"concurrency", {1, 8}}, {"window_s", 1}};
  auto serve = [&](int run_id) {
    auto created = rig.daemon.call("POST", "/v1/experiments", admin, body.dump());
    INFO(created.body);
    REQUIRE(created.status == 201);
    const std::string path = "/v1/runs/" + std::to_string(run_id);
    bool finished = eventually([&] { return is_terminal(rig.daemon.call("GET", path, admin).json()); },
                               std::chrono::seconds(400));
    json run = rig.daemon.call("GET", path, admin).json();
    INFO(run.dump(2));
    INFO(rig.daemon.log());
    REQUIRE(finished);
    REQUIRE(run["status"] == "done");
    CHECK(run["nodes"] == 2);
    CHECK(run["node_phases"][0]["phases"]["learn"].get<double>() > 0);  // serving, until the client stopped it
    CHECK(run["node_phases"][1]["phases"]["learn"].get<double>() > 0);  // the measured load
    REQUIRE(run["metrics"]["serving"].size() == 2);
    for (const auto& l : run["metrics"]["serving"]) CHECK(l["errors"] == 0);
    return run;
  };
  const json plain = serve(1);
  std::ofstream(shaping.file("delay")) << "on\n";
  const json delayed = serve(2);
  MESSAGE("how each guest was delayed:\n" << std::string(std::istreambuf_iterator<char>(
                                                  std::ifstream(shaping.file("shaped")).rdbuf()), {}));
  const json p1 = level_at(plain, 1), d1 = level_at(delayed, 1), p8 = level_at(plain, 8), d8 = level_at(delayed, 8);
  INFO("plain c1 " << p1.dump() << "\ndelayed c1 " << d1.dump() << "\nplain c8 " << p8.dump() << "\ndelayed c8 "
                   << d8.dump());
  MESSAGE("p50 at concurrency 1: " << p1["p50_ms"] << " -> " << d1["p50_ms"] << " ms; round trip " << p1["rtt_ms"]
                                   << " -> " << d1["rtt_ms"] << " ms; requests/s at concurrency 8: "
                                   << p8["throughput_rps"] << " -> " << d8["throughput_rps"]);
  CHECK(p1["p50_ms"].get<double>() >= 20.0);
  // The round trip grows by the 10 ms the two guests add (at least that: a packet is never let go early) ...
  const double rtt_added = d1["rtt_ms"].get<double>() - p1["rtt_ms"].get<double>();
  const double p50_added = d1["p50_ms"].get<double>() - p1["p50_ms"].get<double>();
  // The upper bounds are loose: a busy machine adds its own waits (issue 39).
  CHECK(rtt_added >= 9.5);
  CHECK(rtt_added <= 40.0);
  // ... and so does p50 at concurrency 1: one round trip per request.
  CHECK(p50_added >= 8.0);
  CHECK(p50_added <= 40.0);
  CHECK(d1["network_ms"].get<double>() > p1["network_ms"].get<double>() + 8.0);  // the split puts it in the network
  // With 8 in flight the round trips overlap the server's work, so the throughput is the server's again: printed
  // above and in docs/serving.md (49.3 -> 49.0 requests/s quiet), not asserted, as a busy machine moves it.

  // The planner prices both runs of the workload: per million requests at the highest rate under the bound.
  auto plan = rig.daemon.call("GET", "/v1/plan?experiment=1&objective=serve&p99_ms=10000", admin);
  INFO(plan.body);
  REQUIRE(plan.status == 200);
  const json p = plan.json();
  CHECK(p["history_runs"] == 2);
  REQUIRE(p["ranked"].size() == 1);
  CHECK(p["ranked"][0]["cost_per_million"].get<double>() > 0);
  CHECK(p["ranked"][0]["curve"].size() == 2);
  const json tight = rig.daemon.call("GET", "/v1/plan?experiment=1&objective=serve&p99_ms=1", admin).json();
  CHECK(tight["ranked"].empty());
  CHECK(tight["infeasible"].size() == 1);
  CHECK(rig.daemon.call("GET", "/v1/plan?experiment=1&objective=serve", admin).status == 422);  // no bound
  // The server's settings are part of a configuration, and the plan takes them as filters.
  CHECK(p["ranked"][0]["settings"]["max_batch"] == 1);
  CHECK(p["ranked"][0]["settings"]["instances"] == 1);
  CHECK(rig.daemon.call("GET", "/v1/plan?experiment=1&objective=serve&p99_ms=10000&max_batch=1&instances=1", admin)
            .json()["ranked"]
            .size() == 1);
  const auto other = rig.daemon.call("GET", "/v1/plan?experiment=1&objective=serve&p99_ms=10000&max_batch=4", admin);
  CHECK(other.status == 422);
  CHECK(other.body.find("max_batch") != std::string::npos);
  // The export carries each level's figures.
  const auto csv = rig.daemon.call("GET", "/v1/experiments/2/export?format=csv", admin);
  CHECK(csv.body.find("serve_c8_throughput_rps") != std::string::npos);
  CHECK(eventually([&] { return rig.guest_processes() == 0; }, std::chrono::seconds(120)));
}

TEST_CASE("leak guard on each fake cloud: a crash between create and its commit; the restarted daemon sweeps by tag") {
  CloudRigs all([](const std::string&) { return ""; });
  for (std::size_t i = 0; i < all.rigs.size(); ++i) {
    setenv("TSUM_FAULT_EXIT_AFTER_CREATE", "1", 1);
    all.rigs[i]->daemon.start();
    unsetenv("TSUM_FAULT_EXIT_AFTER_CREATE");
    REQUIRE(all.rigs[i]->daemon.call("POST", "/v1/experiments", all.admins[i], all.rigs[i]->experiment(300)).status ==
            201);
  }
  for (auto& r : all.rigs) {
    CloudRig& rig = *r;
    CAPTURE(rig.fake.name());
    // The daemon dies right after the create returns; the instance boots and its agent waits for a daemon.
    auto status = rig.daemon.wait_exit(std::chrono::seconds(60));
    INFO(rig.daemon.log());
    REQUIRE(status.has_value());
    CHECK(rig.guest_processes() > 0);
    CHECK(WIFEXITED(*status));
    CHECK(WEXITSTATUS(*status) == 137);
    rig.daemon.start();
  }
  auto stray_line = [](const CloudRig& rig) { return "reconcile: stray " + rig.fake.name() + " instance "; };
  all.each([&](std::size_t i) {
    const CloudRig& rig = *all.rigs[i];
    return rig.guest_processes() == 0 && is_terminal(rig.run(all.admins[i])) &&
           rig.daemon.log().find(stray_line(rig)) != std::string::npos;
  }, std::chrono::seconds(180));
  for (std::size_t i = 0; i < all.rigs.size(); ++i) {
    CloudRig& rig = *all.rigs[i];
    const std::string& admin = all.admins[i];
    CAPTURE(rig.fake.name());
    auto run = rig.run(admin);
    INFO(run.dump(2));
    INFO(rig.daemon.log());
    CHECK(rig.guest_processes() == 0);
    CHECK(rig.daemon.log().find(stray_line(rig)) != std::string::npos);
    CHECK(run["status"] == "failed");
    CHECK(run["reason"].get<std::string>().find("before an instance was recorded") != std::string::npos);
    CHECK(rig.daemon.log().find(" could not be terminated") == std::string::npos);
  }
}

TEST_CASE("SIGTERM while the cloud no longer answers: tsumd exits within its grace period; the next start settles the "
          "run and terminates the instance") {
  CloudRig rig("hetzner", "");
  const std::string admin = rig.daemon.admin_token();
  rig.daemon.start({"--grace", "3"});
  REQUIRE(rig.daemon.call("POST", "/v1/experiments", admin, rig.experiment(60000)).status == 201);
  bool learning = eventually([&] { return rig.run(admin)["status"] == "learning"; }, std::chrono::seconds(90));
  INFO(rig.daemon.log());
  REQUIRE(learning);
  rig.fake.pause();
  const auto sent = std::chrono::steady_clock::now();
  auto status = rig.daemon.stop(SIGTERM);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  MESSAGE("tsumd exited " << took << " s after SIGTERM with a dead cloud (grace 3 s)");
  REQUIRE(status.has_value());
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 0);
  CHECK(took < 3 + 27);  // the grace period, plus closing down: not the cloud's timeouts and retries
  CHECK(rig.daemon.log().find("grace period over with 1 run(s) still terminating (1)") != std::string::npos);
  // The cloud has not answered the delete, so the machine may still run and be paid for; whether its processes
  // still show here is not asserted (two CI runs found them gone within the grace period). What must hold is below:
  // the next start settles the run and leaves no machine.

  // The delete sent into the silence may still be carried out once the cloud answers again (it sat in the
  // cloud's queue), so the restarted daemon finds the instance either running, and terminates it, or gone.
  rig.fake.resume();
  auto run = restart_and_settle(rig, admin);
  const auto reason = run["reason"].get<std::string>();
  INFO(reason);
  const bool terminated_now = reason.find("daemon restarted while the run was terminating; instance ") !=
                                  std::string::npos && reason.ends_with(" terminated");
  const bool found_gone = reason.find(" was gone after a daemon restart (run was terminating)") != std::string::npos;
  CHECK((terminated_now || found_gone));
  CHECK(rig.daemon.log().find(" could not be terminated") == std::string::npos);
}

TEST_CASE("kill -9 while learning on each fake cloud: the restarted daemon takes the run back, and a cancel then "
          "terminates its instance") {
  CloudRigs all([](const std::string&) { return ""; });
  for (std::size_t i = 0; i < all.rigs.size(); ++i) {
    all.rigs[i]->daemon.start();
    REQUIRE(all.rigs[i]->daemon.call("POST", "/v1/experiments", all.admins[i], all.rigs[i]->experiment(60000))
                .status == 201);
  }
  // Each daemon is killed as soon as its run is learning (60,000 images keep it there).
  std::vector<bool> killed(all.rigs.size(), false);
  all.each([&](std::size_t i) {
    CloudRig& rig = *all.rigs[i];
    if (!killed[i] && rig.run(all.admins[i])["status"] == "learning") {
      auto status = rig.daemon.stop(SIGKILL);
      CAPTURE(rig.fake.name());
      REQUIRE(status.has_value());
      CHECK(WIFSIGNALED(*status));
      CHECK(rig.guest_processes() > 0);  // still running, still paid
      killed[i] = true;
      rig.daemon.start();
    }
    return bool(killed[i]);
  }, std::chrono::seconds(180));
  for (std::size_t i = 0; i < all.rigs.size(); ++i) {
    CloudRig& rig = *all.rigs[i];
    const std::string& admin = all.admins[i];
    CAPTURE(rig.fake.name());
    INFO(rig.daemon.log());
    REQUIRE(killed[i]);  // its run reached learning
    // Its machine outlived the daemon: the restarted one watches it again, and the agent's events reach it.
    CHECK(eventually([&] { return rig.daemon.log().find("reconcile: run 1 (learning) goes on on instance") != std::string::npos; },
                     std::chrono::seconds(60)));
    CHECK(rig.daemon.call("DELETE", "/v1/runs/1", admin).status == 202);
  }
  for (std::size_t i = 0; i < all.rigs.size(); ++i) {
    CloudRig& rig = *all.rigs[i];
    CAPTURE(rig.fake.name());
    INFO(rig.daemon.log());
    bool clean = eventually([&] { return rig.guest_processes() == 0 && is_terminal(rig.run(all.admins[i])); },
                            std::chrono::seconds(120));
    auto run = rig.run(all.admins[i]);
    INFO(run.dump(2));
    CHECK(clean);
    CHECK(run["status"] == "cancelled");
    CHECK(run["phases"]["install"].get<double>() >= 0);   // what was measured before the kill is kept
    CHECK(run["phases"]["poweroff"].get<double>() >= 0);  // the termination was confirmed and timed
  }
}
