// Spot runs that finish anywhere (issue 54), on fakes whose guests share only the network with tsumd: the fake
// EC2 serving two regions and the fake GCE, both configured. A run with spot_recovery.policy "cloud" is
// interrupted once its first region has no spot capacity left: its next machine is asked for there first (the
// cheapest), EC2 answers InsufficientInstanceCapacity, and it goes to the second region. Interrupted again once
// that region has none either, it goes to GCE. It finishes with an uninterrupted run's accuracy, each attempt
// billed under its own cloud's rule, and no machine is left.
#include <doctest/doctest.h>

#include <cmath>
#include <csignal>
#include <fstream>
#include <string>

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
  bool finished = eventually([&] {
    run = rig.run(admin, 1);
    reference = rig.run(admin, 2);
    return is_terminal(run) && is_terminal(reference);
  }, std::chrono::seconds(400));
  INFO(run.dump(2));
  INFO(rig.daemon.log());
  REQUIRE(finished);
  REQUIRE(run["status"] == "done");
  REQUIRE(reference["status"] == "done");

  const json& a = run["attempts"];
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
  CHECK(run["config"]["region"] == "us-central1");
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
}
