// Spot machines end to end on the fake EC2, whose guests share only the network with tsumd: a run interrupted
// with EC2's two-minute notice (shortened) checkpoints at once and resumes on a new machine; interrupted again
// without notice, it resumes from its periodic checkpoint; tsumd killed with -9 during that recovery loses
// nothing; after two interruptions spot_recovery moves it to on-demand, where it finishes with the accuracy of the
// same training run uninterrupted. No machine is left behind. Its first guest sends at 16 Mbit/s: a checkpoint
// takes longer to upload than the trainer takes to write the next.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <string>

#include "integration/cloud_rig.h"

using namespace tsum;
using namespace tsum::testing;
using nlohmann::json;

namespace {

// Runs a check of tests/web (node, Debian's Chromium) and returns what it printed.
std::string run_web_check(const std::string& args) {
  const std::string cmd = std::string("TSUMD_BIN=") + TSUMD_BIN + " TSUM_WEB_DIR=" + TSUM_WEB_DIR + " " + TSUM_WEB_TESTS +
                          "/own_netns.sh " + TSUM_NODE_BIN + " " + TSUM_WEB_TESTS + "/" + args + " 2>&1";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    out += "\n(exit " + std::to_string(pclose(p)) + ")";
  }
  return out;
}

json run_of(CloudRig& rig, const std::string& admin, int id) {
  return rig.daemon.call("GET", "/v1/runs/" + std::to_string(id), admin).json();
}

// Takes run 1's current machine back once its attempt is `attempt` and `ready` holds; returns the machine's id.
template <class Ready>
std::string interrupt_when(CloudRig& rig, const std::string& admin, int attempt, double notice_s, Ready ready) {
  json run;
  bool up = eventually([&] {
    run = run_of(rig, admin, 1);
    return run["attempt"] == attempt && run["status"] == "learning" && run["instance"].is_object() && ready(run);
  }, std::chrono::seconds(240));
  INFO(run.dump(2));
  INFO(rig.daemon.log());
  REQUIRE(up);
  const std::string id = run["instance"]["id"].get<std::string>();
  const std::string answer = rig.fake.interrupt(id, rig.tls.ca_file(), notice_s);
  INFO(answer);
  REQUIRE(answer.find("interrupting " + id) != std::string::npos);
  return id;
}

// The hook each guest runs as it boots: while dir/shape exists, its uplink (eth0's egress) is held to 16 Mbit/s
// with tc's token bucket, so a checkpoint (14 MB) takes 7 s to send, longer than checkpoint_every_s: the agent
// must not fall behind the trainer (a notice's checkpoint queued behind older ones missed the cloud's deadline).
// Shaped guests are noted in dir/shaped.
std::string shaped_uplink(const TempDir& dir) {
  std::ofstream(dir.file("shape")) << "";
  std::ofstream(dir.file("hook.sh")) << "set -u\nD='" << dir.path().string() << "'\n"
      "[ -e \"$D/shape\" ] || exit 0\n"
      "ip netns exec \"$TSUM_GUEST_NETNS\" tc qdisc add dev eth0 root tbf rate 16mbit burst 64kbit latency 400ms || exit 1\n"
      "echo \"$TSUM_GUEST_ID\" >> \"$D/shaped\"\n";
  return "sh '" + dir.file("hook.sh") + "'";
}

// Submits run 1: a small spot training on `cloud`'s first offer, with `recovery` as its spot_recovery.
void submit_spot(CloudRig& rig, const std::string& admin, const std::string& cloud, json recovery = json::object()) {
  auto offers = json::parse(run_tsumd(rig.dir, "offers --json --config " + rig.dir.file("tsumd-" + cloud + ".json")).out);
  REQUIRE_FALSE(offers["offers"].empty());
  json config = {{"provider", cloud}, {"instance_type", offers["offers"][0]["instance_type"]}, {"market", "spot"}};
  if (!recovery.empty()) config["spot_recovery"] = recovery;
  json body = {{"name", "spot on " + cloud},
               {"workload", {{"epochs", 2}, {"limit", 6000}, {"test_limit", 500}, {"threads", 1}}},
               {"configs", {config}},
               {"repetitions", 1}};
  REQUIRE(rig.daemon.call("POST", "/v1/experiments", admin, body.dump()).status == 201);
}

// Run 1 once it has finished (a failed check shows it and the daemon's log).
json finished_run(CloudRig& rig, const std::string& admin) {
  json run;
  bool finished = eventually([&] { return is_terminal(run = run_of(rig, admin, 1)); }, std::chrono::seconds(300));
  INFO(run.dump(2));
  INFO(rig.daemon.log());
  REQUIRE(finished);
  CHECK(run["status"] == "done");
  return run;
}

}  // namespace

TEST_CASE("a spot run on the fake EC2 is interrupted twice (with notice, then without), tsumd is killed during the "
          "recovery, and it finishes on on-demand with an uninterrupted run's accuracy; no machine is left") {
  TempDir shaping("tsum-spot-shape");
  CloudRig rig("aws", "", kGuestImage, 0, /*metadata=*/true, shaped_uplink(shaping));
  rig.daemon.start();
  const std::string admin = rig.daemon.admin_token();
  auto offers = json::parse(run_tsumd(rig.dir, "offers --json --config " + rig.dir.file("tsumd-aws.json")).out)["offers"];
  REQUIRE_FALSE(offers.empty());
  // Run 1 on spot, run 2 the same training on on-demand: the reference.
  json body = {{"name", "spot"},
               {"workload", {{"epochs", 3}, {"limit", 6000}, {"test_limit", 1000}, {"threads", 1}}},
               {"configs", {{{"provider", "aws"}, {"instance_type", offers[0]["instance_type"]},
                             {"market", {"spot", "on-demand"}},
                             {"spot_recovery", {{"on_demand_after", 2}, {"checkpoint_every_s", 4}}}}}},
               {"repetitions", 1}};
  auto created = rig.daemon.call("POST", "/v1/experiments", admin, body.dump());
  INFO(created.body);
  REQUIRE(created.status == 201);

  // 1: a notice (30 s) once the first epoch is done: the agent checkpoints at once, its upload at most one other's
  // behind on the slow uplink. The machines after it send at full speed: the second must deliver a periodic
  // checkpoint in what is left of the training, a race between the uplink and the CPU no machine should decide.
  interrupt_when(rig, admin, 1, 30, [&](const json& run) {
    if (run["epochs"].size() < 1) return false;
    std::filesystem::remove(shaping.file("shape"));
    return true;
  });
  // 2: no notice, once the second machine has delivered a periodic checkpoint and learned a while since.
  interrupt_when(rig, admin, 2, 0, [](const json& run) {
    return run["attempts"].size() == 2 && run["attempts"][1]["checkpoint"].is_object();
  });
  // tsumd killed with -9 while the run waits for, or boots, its third machine.
  bool recovering = eventually([&] { return run_of(rig, admin, 1)["attempt"] == 3; }, std::chrono::seconds(60));
  REQUIRE(recovering);
  auto killed = rig.daemon.stop(SIGKILL);
  REQUIRE(killed.has_value());
  rig.daemon.start();

  json run, reference;
  bool finished = eventually([&] {
    run = run_of(rig, admin, 1);
    reference = run_of(rig, admin, 2);
    return is_terminal(run) && is_terminal(reference);
  }, std::chrono::seconds(300));
  const std::string machine_log = rig.daemon.call("GET", "/v1/runs/1/logs", admin).body;
  INFO(run.dump(2));
  INFO(machine_log);
  INFO(rig.daemon.log());
  INFO(rig.fake.log());
  REQUIRE(finished);
  REQUIRE(run["status"] == "done");
  REQUIRE(reference["status"] == "done");
  CHECK(reference["attempt"] == 1);
  const json& attempts = run["attempts"];
  // The first machine (and the reference's) sent at 16 Mbit/s, and every checkpoint the agent took went out whole.
  std::ifstream shaped(shaping.file("shaped"));
  const std::string shaped_ids((std::istreambuf_iterator<char>(shaped)), std::istreambuf_iterator<char>());
  INFO(shaped_ids);
  CHECK(shaped_ids.find(attempts[0]["instance"].get<std::string>() + "\n") != std::string::npos);
  CHECK(machine_log.find("tsum-agent: checkpoint:") == std::string::npos);

  REQUIRE(attempts.size() >= 3);  // a fourth when the kill caught the third machine already created
  // The first: EC2's notice reached the agent, which checkpointed at once: nothing was learned twice.
  CHECK(attempts[0]["market"] == "spot");
  CHECK(attempts[0]["outcome"] == "interrupted");
  CHECK(attempts[0]["notice"]["source"] == "agent");
  CHECK(attempts[0]["notice"]["cloud"] == "aws");
  CHECK(attempts[0]["notice"]["text"].get<std::string>().find("\"action\": \"terminate\"") != std::string::npos);
  CHECK(attempts[0]["checkpoint"]["reason"] == "signal");
  // lost_s runs from the last checkpoint's taking to the notice's arrival, on the daemon's clock: about nothing
  // here (the trainer checkpoints as the notice goes out), but the notice's post can be slower than the checkpoint
  // under load: a time, not a bound to check. That the notice's checkpoint was resumed, its reason says (above).
  CHECK(attempts[0]["lost_s"].get<double>() >= 0);
  CHECK(attempts[0]["lost_s"].get<double>() <= attempts[0]["up_s"].get<double>());
  // AWS charges nothing for a spot instance it interrupts within its first hour.
  for (const auto& [rule, bill] : attempts[0]["cost"].items()) CHECK(bill["amount"].get<double>() == 0);
  // The second: gone without notice; EC2's state reason told the daemon; what followed the periodic checkpoint
  // was learned again.
  CHECK(attempts[1]["market"] == "spot");
  CHECK(attempts[1]["outcome"] == "interrupted");
  CHECK(attempts[1]["notice"]["source"] == "cloud");
  CHECK(attempts[1]["reason"].get<std::string>().find("Server.SpotInstanceTermination") != std::string::npos);
  CHECK(attempts[1]["checkpoint"]["reason"] == "periodic");
  CHECK(attempts[1]["checkpoint"]["taken_at"].get<double>() <= attempts[1]["checkpoint"]["received_at"].get<double>());
  CHECK(attempts[1]["lost_s"].get<double>() > 0);  // the daemon saw the checkpoint before the test took the machine
  CHECK(attempts[1]["lost_s"].get<double>() <= attempts[1]["up_s"].get<double>());
  // After two interruptions, on-demand (spot_recovery.on_demand_after); every attempt its own machine.
  CHECK(attempts.back()["market"] == "on-demand");
  CHECK(attempts.back()["outcome"] == "done");
  CHECK(attempts[0]["instance"] != attempts[1]["instance"]);
  // The kill ended the third attempt: "abandoned". When it came before the machine was recorded, its up-time is
  // unknown (the restarted daemon terminated it as a stray); every other attempt's machine was timed to its end.
  if (attempts.size() > 3) CHECK(attempts[2]["outcome"] == "abandoned");
  for (const auto& a : attempts) {
    INFO(a.dump());
    if (a["outcome"] == "abandoned" && a["instance"].is_null()) continue;
    CHECK(a["up_s"].get<double>() > 0);
  }
  // The finished model: an uninterrupted run's accuracy, within a point.
  const double acc = run["metrics"]["test_accuracy"].get<double>();
  const double ref = reference["metrics"]["test_accuracy"].get<double>();
  CHECK(std::abs(acc - ref) <= 0.01);
  CHECK(acc > 0.5);
  // t_sum spans every machine: the first create to the last poweroff.
  double last = 0;
  for (const auto& [phase, secs] : run["phases"].items()) last += secs.get<double>();
  CHECK(run["t_sum"].get<double>() > last);
  CHECK(run["lost_s"].get<double>() >= attempts[1]["lost_s"].get<double>());

  // The planner: the type's spot candidate beside its on-demand twin, priced with the interruptions tsum saw of
  // it (two, in a few machine-minutes) and the restarts this run measured; the deadline's odds count them.
  const std::string type = offers[0]["instance_type"];
  auto planned = rig.daemon.call("GET", "/v1/plan?experiment=" + std::to_string(json::parse(created.body)["id"].get<int>()) +
                                            "&objective=cost_under_deadline&deadline=3600", admin);
  INFO(planned.body);
  REQUIRE(planned.status == 200);
  json spot_entry, od_entry;
  const json plan = json::parse(planned.body);
  for (const auto& e : plan["ranked"])
    if (e["instance_type"] == type) (e["market"] == "spot" ? spot_entry : od_entry) = e;
  REQUIRE(spot_entry.is_object());
  REQUIRE(od_entry.is_object());
  CHECK(spot_entry["config"] == "aws/" + type + "/spot");
  CHECK(spot_entry["hourly_price"].get<double>() < od_entry["hourly_price"].get<double>());
  CHECK(spot_entry["interruptions"]["rate_basis"].get<std::string>().find("measured: 2 interruptions") == 0);
  CHECK(spot_entry["interruptions"]["rate_per_hour"].get<double>() > 1);  // two in minutes outweigh the prior's hour
  CHECK(spot_entry["interruptions"]["restart_s"].get<double>() > 0);
  CHECK(spot_entry["interruptions"]["checkpoint_every_s"] == 4);  // the experiment's spot_recovery
  CHECK(spot_entry["interruptions"]["free_first_hour"] == true);
  CHECK(spot_entry["interruptions"]["expected"].get<double>() > 0);
  CHECK(spot_entry["p_deadline"].get<double>() <= od_entry["p_deadline"].get<double>());
  CHECK(spot_entry["reason"].get<std::string>().find("interruptions expected") != std::string::npos);
  CHECK(rig.daemon.call("GET", "/v1/plan?experiment=1&interruptions_per_hour=-1", admin).status == 422);

  CHECK(eventually([&] { return rig.guest_processes() == 0; }, std::chrono::seconds(120)));

  // The run page's Machines card, in headless Chromium, on this run's database served by a fresh tsumd.
  REQUIRE(rig.daemon.stop(SIGTERM).has_value());
  const std::string card = run_web_check("machines_card.mjs " + rig.dir.file("t.db") + " 1 " + rig.dir.file("machines.png"));
  INFO(card);
  CHECK(card.find("machines card: ok (" + std::to_string(attempts.size()) + " attempts)") != std::string::npos);
}

TEST_CASE("a spot run on the fake GCE: preempted with its 30 s notice on the metadata server, it checkpoints and "
          "finishes on its next Spot VM, in the next of its spot_recovery.zones") {
  CloudRig rig("gce", "", kGuestImage, 0, /*metadata=*/true);
  rig.daemon.start();
  const std::string admin = rig.daemon.admin_token();
  submit_spot(rig, admin, "gce", {{"zones", {"us-central1-b", "europe-west4-a"}}});
  interrupt_when(rig, admin, 1, 30, [](const json& run) { return run["epochs"].size() >= 1; });
  const json run = finished_run(rig, admin);
  INFO(run.dump(2));
  REQUIRE(run["attempts"].size() == 2);
  const json& first = run["attempts"][0];
  CHECK(first["outcome"] == "interrupted");
  CHECK(first["notice"]["source"] == "agent");
  CHECK(first["notice"]["cloud"] == "gce");
  CHECK(first["notice"]["text"] == "TRUE");
  CHECK(first["checkpoint"]["reason"] == "signal");
  CHECK(run["attempts"][1]["market"] == "spot");
  CHECK(first["zone"] == "us-central1-b");
  CHECK(run["attempts"][1]["zone"] == "europe-west4-a");
  CHECK(run["instance"]["data"]["zone"] == "europe-west4-a");  // GCE put it there
  CHECK(run["metrics"]["test_accuracy"].get<double>() > 0.5);
  CHECK(eventually([&] { return rig.guest_processes() == 0; }, std::chrono::seconds(120)));
}

TEST_CASE("a spot run on the fake Azure: evicted with its Preempt event on Scheduled Events, then without notice "
          "(the Spot VM gone from its resource group), it finishes on its third Spot VM") {
  CloudRig rig("azure", "", kGuestImage, 0, /*metadata=*/true);
  rig.daemon.start();
  const std::string admin = rig.daemon.admin_token();
  submit_spot(rig, admin, "azure");
  interrupt_when(rig, admin, 1, 30, [](const json& run) { return run["epochs"].size() >= 1; });
  interrupt_when(rig, admin, 2, 0, [](const json&) { return true; });
  const json run = finished_run(rig, admin);
  INFO(run.dump(2));
  REQUIRE(run["attempts"].size() == 3);
  const json& first = run["attempts"][0];
  CHECK(first["outcome"] == "interrupted");
  CHECK(first["notice"]["source"] == "agent");
  CHECK(first["notice"]["cloud"] == "azure");
  CHECK(first["notice"]["text"].get<std::string>().find("Preempt") != std::string::npos);
  CHECK(first["checkpoint"]["reason"] == "signal");
  const json& second = run["attempts"][1];
  CHECK(second["outcome"] == "interrupted");
  CHECK(second["notice"]["source"] == "cloud");
  CHECK(second["reason"].get<std::string>().find("Azure evicted the Spot VM") != std::string::npos);
  CHECK(run["attempts"][2]["market"] == "spot");
  CHECK(run["metrics"]["test_accuracy"].get<double>() > 0.5);
  CHECK(eventually([&] { return rig.guest_processes() == 0; }, std::chrono::seconds(120)));
}

// bench/spot.sh (skipped in the suite): one training run interrupted 0, 1, 2 and 4 times, each time with a notice
// of 30 s (GCE's and Azure's window) once the machine has learned 2 s. Prints a line per run:
//   spot-bench: k=<interruptions> t_sum=<s> lost_s=<s> cost=<USD> notice_to_checkpoint_s=<max over its interruptions>
//               resume_s=<mean of new machine to learning again> accuracy=<test accuracy>
TEST_CASE("bench: a spot run interrupted 0, 1, 2 and 4 times" * doctest::skip(true)) {
  CloudRig rig("aws", "", kGuestImage, 0, /*metadata=*/true);
  rig.daemon.start();
  const std::string admin = rig.daemon.admin_token();
  auto offers = json::parse(run_tsumd(rig.dir, "offers --json --config " + rig.dir.file("tsumd-aws.json")).out)["offers"];
  REQUIRE_FALSE(offers.empty());
  const int epochs = std::getenv("SPOT_EPOCHS") ? std::atoi(std::getenv("SPOT_EPOCHS")) : 4;
  int id = 0;
  for (int k : {0, 1, 2, 4}) {
    json body = {{"name", "spot bench k=" + std::to_string(k)},
                 {"workload", {{"epochs", epochs}, {"limit", 6000}, {"test_limit", 1000}, {"threads", 1}}},
                 {"configs", {{{"provider", "aws"}, {"instance_type", offers[0]["instance_type"]}, {"market", "spot"},
                               {"spot_recovery", {{"checkpoint_every_s", 60}}}}}},
                 {"repetitions", 1}};
    REQUIRE(rig.daemon.call("POST", "/v1/experiments", admin, body.dump()).status == 201);
    ++id;
    std::vector<double> noticed_at;  // wall clock when each notice was given
    for (int j = 1; j <= k; ++j) {
      json run;
      std::optional<std::chrono::steady_clock::time_point> learning_since;
      bool ready = eventually([&] {
        run = run_of(rig, admin, id);
        const bool learning = run["attempt"] == j && run["status"] == "learning" && run["instance"].is_object();
        if (!learning) learning_since.reset();
        else if (!learning_since) learning_since = std::chrono::steady_clock::now();
        return learning && std::chrono::steady_clock::now() - *learning_since > std::chrono::seconds(2);
      }, std::chrono::seconds(300));
      INFO(run.dump(2));
      REQUIRE(ready);
      noticed_at.push_back(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
      REQUIRE(rig.fake.interrupt(run["instance"]["id"].get<std::string>(), rig.tls.ca_file(), 30).find("interrupting") !=
              std::string::npos);
    }
    json run;
    REQUIRE(eventually([&] { return is_terminal(run = run_of(rig, admin, id)); }, std::chrono::seconds(600)));
    INFO(run.dump(2));
    REQUIRE(run["status"] == "done");
    double worst_notice = 0, resume = 0;
    for (int j = 0; j < k; ++j) {
      const json& a = run["attempts"][j];
      REQUIRE(a["checkpoint"].is_object());
      worst_notice = std::max(worst_notice, a["checkpoint"]["received_at"].get<double>() - noticed_at[j]);
      const json& next = run["attempts"][j + 1]["phases"];
      for (const char* p : {"startup", "install", "load_data", "start"}) resume += next[p].get<double>() / k;
    }
    // EC2's own rule: per second, a minute at least.
    const double cost = run["cost"]["per_second_60s_min"]["amount"].get<double>();
    double paid_s = 0;  // machine seconds billed, interrupted attempts free
    for (const auto& a : run["attempts"]) paid_s += a["cost"]["per_second_60s_min"]["billed_s"].get<double>();
    std::cout << "spot-bench: k=" << k << " t_sum=" << run["t_sum"].get<double>()
              << " lost_s=" << (run["lost_s"].is_null() ? 0.0 : run["lost_s"].get<double>()) << " cost=" << cost
              << " billed_s=" << paid_s
              << " notice_to_checkpoint_s=" << worst_notice << " resume_s=" << resume
              << " accuracy=" << run["metrics"]["test_accuracy"].get<double>() << std::endl;
  }
  CHECK(eventually([&] { return rig.guest_processes() == 0; }, std::chrono::seconds(120)));
}
