// Spot runs that finish anywhere (issue 54), on fakes whose guests share only the network with tsumd: the fake
// EC2 serving two regions and the fake GCE, both configured. A run with spot_recovery.policy "cloud" is
// interrupted once its first region has no spot capacity left: its next machine is asked for there first (the
// cheapest), EC2 answers InsufficientInstanceCapacity, and it goes to the second region. Interrupted again once
// that region has none either, it goes to GCE. It finishes with an uninterrupted run's accuracy, each attempt
// billed under its own cloud's rule, and no machine is left. And a two-node ring run on spot, one of whose nodes
// gets the notice: every rank checkpoints at one step and resumes there.
#include <doctest/doctest.h>

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>

#include "integration/cloud_rig.h"

using namespace tsum;
using namespace tsum::testing;
using nlohmann::json;

namespace {

// The fake EC2 in us-east-1 and us-west-2 and the fake GCE, booting guests on one test network, and a tsumd
// configured with both.
struct TwoCloudRig {
  TwoCloudRig()
      : guest_root(dir.file("guests")),
        aws("aws", dir, tls, "", {.root = guest_root, .image = kGuestImage, .network = net.bridge()},
            net.listen_address(), {"--region", "us-east-1,us-west-2"}),
        gce("gce", dir, tls, "", {.root = guest_root, .image = kGuestImage, .network = net.bridge()},
            net.listen_address()),
        daemon(dir.file("t.db"),
               {"--config", config(), "--public-url", "http://" + net.listen_address() + ":{port}", "--insecure-agents"},
               net.listen_address()) {}

  std::string config() {
    json aws_section = aws.section();
    aws_section.erase("region");
    aws_section["regions"] = {"us-east-1", "us-west-2"};
    const std::string path = dir.file("tsumd.json");
    std::ofstream(path) << json{{"providers", {{"aws", aws_section}, {"gce", gce.section()}}}}.dump(2);
    chmod(path.c_str(), 0600);
    return path;
  }

  json run(const std::string& admin, int id) const {
    return daemon.call("GET", "/v1/runs/" + std::to_string(id), admin).json();
  }

  TempDir dir{"tsum-moves"};
  TestTls tls;
  TestNetwork net;
  ProcessList guests = net.guests();
  std::string guest_root;
  FakeCloud aws, gce;
  DaemonProcess daemon;
};

// Run `id`'s current machine, once its attempt is `attempt` and it is learning; returns the run view.
json learning(TwoCloudRig& rig, const std::string& admin, int id, int attempt) {
  json run;
  bool up = eventually([&] {
    run = rig.run(admin, id);
    return run["attempt"] == attempt && run["status"] == "learning" && run["instance"].is_object() &&
           !run["epochs"].empty();
  }, std::chrono::seconds(300));
  INFO(run.dump(2));
  INFO(rig.daemon.log());
  REQUIRE(up);
  return run;
}

// Runs 1 (on spot) and 2 (its on-demand reference) once both have finished; both must be done.
std::pair<json, json> both_done(const DaemonProcess& daemon, const std::string& admin, std::chrono::seconds within) {
  json run, reference;
  bool finished = eventually([&] {
    run = daemon.call("GET", "/v1/runs/1", admin).json();
    reference = daemon.call("GET", "/v1/runs/2", admin).json();
    return is_terminal(run) && is_terminal(reference);
  }, within);
  INFO(run.dump(2));
  INFO(daemon.log());
  REQUIRE(finished);
  REQUIRE(run["status"] == "done");
  REQUIRE(reference["status"] == "done");
  return {run, reference};
}

}  // namespace

TEST_CASE("a spot run with policy cloud moves to a second region, then to a second cloud, as each runs out of spot "
          "capacity; it finishes with an uninterrupted run's accuracy, each attempt billed by its own cloud") {
  TwoCloudRig rig;
  rig.daemon.start();
  const std::string admin = rig.daemon.admin_token();
  auto offers = json::parse(run_tsumd(rig.dir, "offers --json --provider aws --config " + rig.dir.file("tsumd.json")).out);
  INFO(offers.dump());
  // The type's offers in both regions, us-west-2's spot dearer (the fake's regions differ by 15 %).
  std::string type;
  std::map<std::string, double> spot;
  for (const auto& o : offers["offers"])
    if (o["instance_type"] == "t3.micro") spot[o["region"].get<std::string>()] = o["spot_hourly_price"].get<double>();
  REQUIRE(spot.size() == 2);
  REQUIRE(spot["us-west-2"] > spot["us-east-1"]);

  // Run 1 on spot with policy cloud; run 2 the same training on on-demand, the reference.
  json body = {{"name", "moves"},
               {"workload", {{"epochs", 3}, {"limit", 6000}, {"test_limit", 1000}, {"threads", 1}}},
               {"configs", {{{"provider", "aws"}, {"instance_type", "t3.micro"}, {"market", {"spot", "on-demand"}},
                             {"spot_recovery", {{"policy", "cloud"}, {"checkpoint_every_s", 4}}}}}},
               {"repetitions", 1}};
  auto created = rig.daemon.call("POST", "/v1/experiments", admin, body.dump());
  INFO(created.body);
  REQUIRE(created.status == 201);

  // 1: us-east-1 has no spot capacity left, then its machine is taken back with a notice.
  json run = learning(rig, admin, 1, 1);
  REQUIRE(rig.aws.spot_capacity("us-east-1", 0, rig.tls.ca_file()).find("spot capacity in us-east-1: 0") != std::string::npos);
  REQUIRE(rig.aws.interrupt(run["instance"]["id"], rig.tls.ca_file(), 20).find("interrupting") != std::string::npos);
  // 2: in us-west-2; that region runs out too, and its machine goes without notice.
  run = learning(rig, admin, 1, 2);
  CHECK(run["instance"]["data"]["region"] == "us-west-2");
  REQUIRE(rig.aws.spot_capacity("us-west-2", 0, rig.tls.ca_file()).find("spot capacity in us-west-2: 0") != std::string::npos);
  REQUIRE(rig.aws.interrupt(run["instance"]["id"], rig.tls.ca_file(), 0).find("interrupting") != std::string::npos);

  json reference;
  std::tie(run, reference) = both_done(rig.daemon, admin, std::chrono::seconds(400));

  const json& a = run["attempts"];
  const std::string machine_log = rig.daemon.call("GET", "/v1/runs/1/logs", admin).body;
  INFO(run.dump(2));
  INFO(machine_log);
  INFO(rig.daemon.log());
  REQUIRE(a.size() == 3);
  // The first machine: us-east-1, taken back with notice, its checkpoint held.
  CHECK(a[0]["provider"] == "aws");
  CHECK(a[0]["region"] == "us-east-1");
  CHECK(a[0]["outcome"] == "interrupted");
  CHECK(a[0]["checkpoint"]["reason"] == "signal");
  CHECK(a[0]["skipped"].empty());
  // The second: us-east-1 was tried first (the cheapest) and said it had no capacity; us-west-2 had it.
  CHECK(a[1]["provider"] == "aws");
  CHECK(a[1]["region"] == "us-west-2");
  CHECK(a[1]["market"] == "spot");
  CHECK(a[1]["hourly_price"].get<double>() == doctest::Approx(spot["us-west-2"]));
  REQUIRE(a[1]["skipped"].size() == 1);
  CHECK(a[1]["skipped"][0]["offer"] == "aws us-east-1 t3.micro spot");
  CHECK(a[1]["skipped"][0]["error"].get<std::string>().find("InsufficientInstanceCapacity") != std::string::npos);
  CHECK(a[1]["outcome"] == "interrupted");
  CHECK(a[1]["notice"]["source"] == "cloud");
  // The third: us-east-1 passed over without asking (its capacity ran out minutes ago), us-west-2 asked and
  // refused, so GCE: the cheapest of its offers with the machine's vCPUs and memory.
  CHECK(a[2]["provider"] == "gce");
  CHECK(a[2]["market"] == "spot");
  REQUIRE(a[2]["skipped"].size() == 1);
  CHECK(a[2]["skipped"][0]["offer"] == "aws us-west-2 t3.micro spot");
  CHECK(a[2]["outcome"] == "done");
  CHECK(run["config"]["provider"] == "gce");
  CHECK(run["config"]["region"].get<std::string>().starts_with("us-central1"));  // GCE offers by zone
  CHECK(run["instance"]["provider"] == "gce");
  // Each attempt billed under its own cloud's rule, in its currency.
  CHECK(a[0]["bill"]["rule"] == "aws_ec2_linux");
  CHECK(a[0]["bill"]["amount"] == 0);  // interrupted by AWS within its first hour
  CHECK(a[1]["bill"]["rule"] == "aws_ec2_linux");
  CHECK(a[2]["bill"]["rule"] == "gce");
  CHECK(a[2]["bill"]["amount"].get<double>() > 0);
  for (const auto& at : a) CHECK(at["bill"]["currency"] == "USD");
  // The resumed model: an uninterrupted run's accuracy, within a point.
  const double acc = run["metrics"]["test_accuracy"].get<double>();
  CHECK(std::abs(acc - reference["metrics"]["test_accuracy"].get<double>()) <= 0.01);
  CHECK(acc > 0.5);
  // No machine left in either cloud.
  CHECK(eventually([&] { return rig.guests().empty(); }, std::chrono::seconds(120)));

  // The plan prices spot per region, each rated by its own region's interruptions, and names the recovery
  // policy whose next machines cost least.
  auto planned = rig.daemon.call("GET", "/v1/plan?experiment=1&objective=cost", admin);
  INFO(planned.body);
  REQUIRE(planned.status == 200);
  std::map<std::string, json> by_config;
  const json plan = json::parse(planned.body);  // named: a range over a temporary's member dangles
  for (const auto& e : plan["ranked"]) by_config[e["config"].get<std::string>()] = e;
  REQUIRE(by_config.count("aws/t3.micro/spot"));
  REQUIRE(by_config.count("aws/t3.micro@us-west-2/spot"));
  REQUIRE(by_config.count("aws/t3.micro@us-west-2"));
  const json& east = by_config["aws/t3.micro/spot"]["interruptions"];
  const json& west = by_config["aws/t3.micro@us-west-2/spot"]["interruptions"];
  CHECK(east["rate_basis"].get<std::string>().find("measured: 1 interruption") == 0);
  CHECK(west["rate_basis"].get<std::string>().find("measured: 1 interruption") == 0);
  CHECK(by_config["aws/t3.micro@us-west-2/spot"]["hourly_price"].get<double>() ==
        doctest::Approx(spot["us-west-2"]));
  for (const json* i : {&east, &west}) {
    CHECK(((*i)["policy"] == "zone" || (*i)["policy"] == "region" || (*i)["policy"] == "cloud"));
    CHECK((*i)["recovery"]["offer"].get<std::string>().ends_with(" spot"));
    CHECK((*i)["recovery"]["hourly_price"].get<double>() > 0);
  }
}

namespace {

// The "resumed" event in an events.jsonl artifact of run 1 (the last attempt's), or null.
json resumed_event(const CloudRig& rig, const std::string& admin, const std::string& artifact) {
  auto got = rig.daemon.call("GET", "/v1/runs/1/artifacts/" + artifact, admin);
  INFO(artifact << ": " << got.status);
  if (got.status != 200) return nullptr;
  std::istringstream lines(got.body);
  for (std::string line; std::getline(lines, line);) {
    auto e = json::parse(line, nullptr, false);
    if (e.is_object() && e.value("event", "") == "resumed") return e;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("a two-node ring run on spot: one node gets EC2's notice, every rank checkpoints at the same step, and "
          "both resume there on two new machines; it finishes with an uninterrupted two-node run's accuracy") {
  CloudRig rig("aws", "", kGuestImage, 0, /*metadata=*/true);
  rig.daemon.start();
  const std::string admin = rig.daemon.admin_token();
  // Run 1 on spot, run 2 the same two-node training on on-demand: the reference.
  // Three epochs: the notice goes out after the first, so two (9 s on 2 cores) are left for it to reach the
  // agent (its 2 s poll, and the epoch mark's delivery before it); with two, CI saw learning end first.
  json body = {{"name", "ring on spot"},
               {"workload", {{"epochs", 3}, {"limit", 6000}, {"test_limit", 1000}, {"threads", 1}}},
               {"configs", {{{"provider", "aws"}, {"instance_type", "t3.micro"}, {"nodes", 2}, {"dist", "ring"},
                             {"market", {"spot", "on-demand"}}, {"spot_recovery", {{"checkpoint_every_s", 600}}}}}},
               {"repetitions", 1}};
  auto created = rig.daemon.call("POST", "/v1/experiments", admin, body.dump());
  INFO(created.body);
  REQUIRE(created.status == 201);

  // Node 1's machine gets the notice once the ranks have learned a while.
  json run;
  bool up = eventually([&] {
    run = rig.daemon.call("GET", "/v1/runs/1", admin).json();
    return run["attempt"] == 1 && run["status"] == "learning" && run["instance"].is_object() && !run["epochs"].empty();
  }, std::chrono::seconds(300));
  INFO(run.dump(2));
  INFO(rig.daemon.log());
  REQUIRE(up);
  const json nodes = run["instance"]["data"]["nodes"];
  REQUIRE(nodes.size() == 2);
  REQUIRE(rig.fake.interrupt(nodes[1]["id"], rig.tls.ca_file(), 30).find("interrupting") != std::string::npos);

  json reference;
  std::tie(run, reference) = both_done(rig.daemon, admin, std::chrono::seconds(480));
  const json& a = run["attempts"];
  REQUIRE(a.size() == 2);
  CHECK(a[0]["outcome"] == "interrupted");
  CHECK(a[0]["notice"]["source"] == "agent");
  CHECK(a[0]["checkpoint"]["reason"] == "signal");
  CHECK(a[1]["outcome"] == "done");
  CHECK(a[1]["market"] == "spot");
  // Each rank's checkpoint at the notice is its own artifact; both ranks resumed at that one step.
  CHECK(a[0]["checkpoint"]["artifact"].get<std::string>().starts_with("checkpoint-a1-n"));
  const json listing = rig.daemon.call("GET", "/v1/runs/1/artifacts", admin).json();
  int n0 = 0, n1 = 0;
  for (const auto& x : listing["artifacts"]) {
    const std::string name = x["name"];
    n0 += name.starts_with("checkpoint-a1-n0-"), n1 += name.starts_with("checkpoint-a1-n1-");
  }
  CHECK(n0 >= 1);
  CHECK(n1 >= 1);
  const json r0 = resumed_event(rig, admin, "events.jsonl");
  json r1 = resumed_event(rig, admin, "node1%2Fevents.jsonl");
  if (r1.is_null()) r1 = resumed_event(rig, admin, "node1/events.jsonl");
  REQUIRE(r0.is_object());
  REQUIRE(r1.is_object());
  CHECK(r0["step"] == r1["step"]);
  CHECK(r0["step"].get<int>() > 0);
  CHECK(r0["step"] == a[0]["checkpoint"]["step"]);
  // The resumed model: the uninterrupted two-node run's accuracy.
  const double acc = run["metrics"]["test_accuracy"].get<double>();
  CHECK(std::abs(acc - reference["metrics"]["test_accuracy"].get<double>()) <= 0.01);
  CHECK(acc > 0.5);
  // Both nodes of both attempts billed; none left.
  CHECK(a[1]["bill"]["amount"].get<double>() > 0);
  CHECK(eventually([&] { return rig.guest_processes() == 0; }, std::chrono::seconds(120)));
}

// bench/spot.sh's rows of runs that move (skipped in the suite): one training run with policy "cloud",
// interrupted `k` times with a 30 s notice once its machine has learned 2 s, each time after its region ran out
// of spot capacity: k=1 moves from us-east-1 to us-west-2, k=2 then on to GCE. Prints a line per run as
// test_spot.cpp's bench does, with recovery=cross-region or cross-region+cloud.
TEST_CASE("bench: a spot run moved across regions and clouds" * doctest::skip(true)) {
  TwoCloudRig rig;
  rig.daemon.start();
  const std::string admin = rig.daemon.admin_token();
  const int epochs = std::getenv("SPOT_EPOCHS") ? std::atoi(std::getenv("SPOT_EPOCHS")) : 4;
  int id = 0;
  for (int k : {1, 2}) {
    for (const char* r : {"us-east-1", "us-west-2"}) REQUIRE(rig.aws.spot_capacity(r, -1, rig.tls.ca_file()).find("unlimited") != std::string::npos);
    json body = {{"name", "moves k=" + std::to_string(k)},
                 {"workload", {{"epochs", epochs}, {"limit", 6000}, {"test_limit", 1000}, {"threads", 1}}},
                 {"configs", {{{"provider", "aws"}, {"instance_type", "t3.micro"}, {"market", "spot"},
                               {"spot_recovery", {{"policy", "cloud"}, {"checkpoint_every_s", 60}}}}}},
                 {"repetitions", 1}};
    REQUIRE(rig.daemon.call("POST", "/v1/experiments", admin, body.dump()).status == 201);
    ++id;
    std::vector<double> noticed_at;
    for (int j = 1; j <= k; ++j) {
      json run;
      std::optional<std::chrono::steady_clock::time_point> since;
      bool ready = eventually([&] {
        run = rig.run(admin, id);
        const bool learning = run["attempt"] == j && run["status"] == "learning" && run["instance"].is_object();
        if (!learning) since.reset();
        else if (!since) since = std::chrono::steady_clock::now();
        return learning && std::chrono::steady_clock::now() - *since > std::chrono::seconds(2);
      }, std::chrono::seconds(300));
      INFO(run.dump(2));
      REQUIRE(ready);
      // Its region runs out.
      const std::string here = run["instance"]["data"]["region"];
      REQUIRE(rig.aws.spot_capacity(here, 0, rig.tls.ca_file()).find(": 0") != std::string::npos);
      noticed_at.push_back(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
      REQUIRE(rig.aws.interrupt(run["instance"]["id"], rig.tls.ca_file(), 30).find("interrupting") != std::string::npos);
    }
    json run;
    REQUIRE(eventually([&] { return is_terminal(run = rig.run(admin, id)); }, std::chrono::seconds(600)));
    INFO(run.dump(2));
    REQUIRE(run["status"] == "done");
    double worst_notice = 0, resume = 0, paid_s = 0, cost = 0;
    int moves = 0;
    for (int j = 0; j < k; ++j) {
      const json& a = run["attempts"][j];
      REQUIRE(a["checkpoint"].is_object());
      worst_notice = std::max(worst_notice, a["checkpoint"]["received_at"].get<double>() - noticed_at[j]);
      moves += run["attempts"][j + 1]["region"] != a["region"] || run["attempts"][j + 1]["provider"] != a["provider"];
      for (const char* p : {"startup", "install", "load_data", "start"})
        resume += run["attempts"][j + 1]["phases"][p].get<double>() / k;
    }
    for (const auto& a : run["attempts"]) paid_s += a["bill"]["billed_s"].get<double>(), cost += a["bill"]["amount"].get<double>();
    CHECK(moves == k);
    std::cout << "spot-bench: k=" << k << " recovery=" << (k == 1 ? "cross-region" : "cross-region+cloud") << " t_sum=" << run["t_sum"].get<double>()
              << " lost_s=" << (run["lost_s"].is_null() ? 0.0 : run["lost_s"].get<double>()) << " cost=" << cost
              << " billed_s=" << paid_s << " notice_to_checkpoint_s=" << worst_notice << " resume_s=" << resume
              << " accuracy=" << run["metrics"]["test_accuracy"].get<double>() << std::endl;
  }
  CHECK(eventually([&] { return rig.guests().empty(); }, std::chrono::seconds(120)));
}
