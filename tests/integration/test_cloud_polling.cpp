// A real tsumd against fake clouds running in this process (so the test can read their request counters and
// inject faults): GET /v1/offers with a price API that fails, per-provider startup deadlines, and one status
// poll per provider and interval for all its live runs. The fakes boot nothing: an instance's agent never
// speaks, which is what a startup deadline is for.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <thread>

#include "integration/daemon_process.h"
#include "tests/fakes/aws/fake_aws_cloud.h"
#include "tests/fakes/hetzner/fake_hetzner_cloud.h"
#include "support/test_tls.h"

using namespace tsum;
using namespace tsum::testing;
using nlohmann::json;
using namespace std::chrono_literals;
namespace aws_fake = tsum::providers::aws::fake;
namespace hetzner_fake = tsum::providers::hetzner::fake;

namespace {

const std::string kHetznerToken = "hcloud-poll-test-token-0123456789";
const providers::aws::Credentials kAwsCreds{"AKIDTSUMPOLL", "tsum-poll-secret-key", ""};

std::string write_private(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.file(name);
  std::ofstream(path) << text;
  chmod(path.c_str(), 0600);
  return path;
}

// A config file with providers.<cloud> = section.
std::string write_config(const TempDir& dir, const std::string& cloud, const json& section) {
  return write_private(dir, "tsumd.json", json{{"providers", {{cloud, section}}}}.dump(2));
}

std::string experiment(const std::string& provider, const std::string& type, int repetitions) {
  return json{{"name", "never speaks"},
              {"workload", {{"epochs", 1}, {"limit", 300}, {"test_limit", 200}, {"threads", 1}}},
              {"configs", {{{"provider", provider}, {"instance_type", type}}}},
              {"repetitions", repetitions}}
      .dump();
}

json runs_of(const DaemonProcess& d, const std::string& admin) {
  return d.call("GET", "/v1/runs?experiment=1", admin).json()["runs"];
}

int count_status(const json& runs, const std::string& status) {
  int n = 0;
  for (const auto& r : runs) n += r["status"] == status;
  return n;
}

// Four runs on `cloud` whose agents never speak: while they boot, the fake sees about one listing per second
// (describe_interval) for all of them, and no per-instance describe; then each fails once the provider's
// startup deadline (set to 30 s in the config: far beyond the few seconds the test watches them boot, on a
// loaded machine too) has passed, the reason naming the deadline.
void four_silent_runs(const std::string& cloud, const std::string& type, json section,
                      const std::function<int()>& list_calls, const std::function<int()>& single_calls) {
  constexpr int kRuns = 4;
  TempDir dir("tsum-poll");
  section["startup_deadline_s"] = 30;
  // Loopback is the "public" URL here: these instances' agents never speak anyway.
  DaemonProcess d(dir.file("t.db"), {"--config", write_config(dir, cloud, section), "--max-concurrent", "4",
                                     "--public-url", "http://127.0.0.1:{port}"});
  const std::string admin = d.admin_token();
  d.start();
  const auto posted = std::chrono::steady_clock::now();
  auto created = d.call("POST", "/v1/experiments", admin, experiment(cloud, type, kRuns));
  INFO(created.body);
  REQUIRE(created.status == 201);

  bool booting = eventually([&] { return count_status(runs_of(d, admin), "booting") == kRuns; }, 25s);
  INFO(runs_of(d, admin).dump(2));
  INFO(d.log());
  REQUIRE(booting);
  const int lists0 = list_calls(), singles0 = single_calls();
  const auto t0 = std::chrono::steady_clock::now();
  // A window of three listings, however long the machine takes to make them.
  CHECK(eventually([&] { return list_calls() - lists0 >= 3; }, 25s));
  const int lists = list_calls() - lists0, singles = single_calls() - singles0;
  const double window_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // The premise: all four were live for the whole window (none reached its deadline yet).
  REQUIRE(count_status(runs_of(d, admin), "booting") == kRuns);
  CAPTURE(window_s);
  CAPTURE(lists);
  CAPTURE(singles);
  CHECK(lists >= 3);                                     // polled, once a second...
  CHECK(lists <= static_cast<int>(window_s) + 2);        // ...for all four runs together, not once per run
  CHECK(singles == 0);                                   // no per-instance describe while they boot

  bool ended = eventually([&] { return count_status(runs_of(d, admin), "failed") == kRuns; }, 120s);
  const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - posted).count();
  auto runs = runs_of(d, admin);
  INFO(runs.dump(2));
  REQUIRE(ended);
  CHECK(took_s >= 30);  // not before the configured deadline
  CHECK(took_s < 120);  // and nowhere near the old fixed 600 s
  // The reason names the deadline (then, for a machine still pending, what the cloud last said it waited for).
  for (const auto& r : runs) {
    const std::string reason = r["reason"];
    CHECK(reason.starts_with("no sign of life from the agent within 30 s (" + cloud + "'s startup deadline, providers." +
                             cloud + ".startup_deadline_s)"));
  }
}

}  // namespace

TEST_CASE("hetzner: four silent runs cost one server listing per second, then fail at the configured startup deadline") {
  hetzner_fake::FakeHetznerCloud fake({.token = kHetznerToken,
                                       .servers = {.initializing_s = 0.2, .starting_s = 0.2, .deleting_s = 0.5}});
  REQUIRE(fake.start().ok());
  TempDir secrets("tsum-poll-secret");
  json section = {{"token_file", write_private(secrets, "token", kHetznerToken)}, {"endpoint", fake.api_url()}};
  four_silent_runs("hetzner", "cx22", section, [&] { return fake.server().requests("servers.list"); },
                   [&] { return fake.server().requests("servers.get"); });
  CHECK(fake.created() == 4);
  CHECK(fake.servers().empty());  // a run fails only once its server is confirmed gone
}

TEST_CASE("aws: four silent runs cost one DescribeInstances per second, then fail at the configured startup deadline") {
  TestTls tls;
  aws_fake::FakeAwsCloud fake({.server = {.listen = {.cert_file = tls.cert_file(), .key_file = tls.key_file()}},
                               .credentials = kAwsCreds,
                            .ec2 = {.pending_s = 0.2, .shutting_down_s = 0.5}});
  REQUIRE(fake.start().ok());
  TempDir secrets("tsum-poll-secret");
  json section = {{"region", "us-east-1"}, {"image_id", "ami-0tsum0test"}, {"access_key_id", kAwsCreds.access_key_id},
                  {"secret_access_key_file", write_private(secrets, "secret", kAwsCreds.secret_access_key)},
                  {"ec2_endpoint", fake.server().base_url()}, {"pricing_endpoint", fake.server().base_url()}, {"ca_file", tls.ca_file()}};
  // EC2 has one action for both: every DescribeInstances counts as a listing, and none may be per instance.
  four_silent_runs("aws", "m5.large", section, [&] { return fake.server().requests("DescribeInstances"); }, [] { return 0; });
}

TEST_CASE("GET /v1/offers names a provider whose price API fails and still returns the others' offers") {
  hetzner_fake::FakeHetznerCloud fake({.token = kHetznerToken});
  REQUIRE(fake.start().ok());
  TempDir dir("tsum-offers-errors");
  json section = {{"token_file", write_private(dir, "token", kHetznerToken)}, {"endpoint", fake.api_url()}};
  DaemonProcess d(dir.file("t.db"), {"--config", write_config(dir, "hetzner", section), "--public-url",
                                     "http://127.0.0.1:{port}"});
  const std::string admin = d.admin_token();
  d.start();

  // Every attempt of the daemon's HTTP client (5, retries included) gets a 500 from the price API.
  fake.server().inject({.method = "server_types.list", .kind = tsum::providers::fake_cloud::FaultKind::internal_500, .count = 5});
  auto failing = d.call("GET", "/v1/offers", admin);
  REQUIRE(failing.status == 200);
  auto body = failing.json();
  INFO(body.dump(2));
  CHECK(fake.server().pending_faults() == 0);
  REQUIRE(body["errors"].size() == 1);
  CHECK(body["errors"][0]["provider"] == "hetzner");
  CHECK(body["errors"][0]["detail"].get<std::string>().find("500") != std::string::npos);
  CHECK(body["errors"][0]["detail"].get<std::string>().find(kHetznerToken) == std::string::npos);
  REQUIRE_FALSE(body["offers"].empty());
  for (const auto& o : body["offers"])  // the others' offers still come back
    CHECK((o["provider"] == "local" || o["provider"] == "byo"));

  auto healthy = d.call("GET", "/v1/offers", admin).json();
  CHECK(healthy["errors"] == json::array());
  int hetzner_offers = 0;
  for (const auto& o : healthy["offers"]) hetzner_offers += o["provider"] == "hetzner";
  CHECK(hetzner_offers > 0);
}

TEST_CASE("GET /v1/offers shows on-demand and spot prices side by side, with where the spot price came from and when") {
  TestTls tls;
  aws_fake::FakeAwsCloud fake({.server = {.listen = {.cert_file = tls.cert_file(), .key_file = tls.key_file()}},
                               .credentials = kAwsCreds});
  REQUIRE(fake.start().ok());
  TempDir dir("tsum-offers-spot");
  json section = {{"region", "us-east-1"}, {"image_id", "ami-0tsum0test"}, {"access_key_id", kAwsCreds.access_key_id},
                  {"secret_access_key_file", write_private(dir, "secret", kAwsCreds.secret_access_key)},
                  {"ec2_endpoint", fake.server().base_url()}, {"pricing_endpoint", fake.server().base_url()},
                  {"ca_file", tls.ca_file()}};
  DaemonProcess d(dir.file("t.db"), {"--config", write_config(dir, "aws", section), "--public-url",
                                     "http://127.0.0.1:{port}"});
  const std::string admin = d.admin_token();
  d.start();
  auto body = d.call("GET", "/v1/offers", admin).json();
  INFO(body.dump(2));
  int aws = 0, local = 0;
  for (const auto& o : body["offers"]) {
    if (o["provider"] == "aws") {
      ++aws;
      CHECK(o["markets"] == json{"on-demand", "spot"});
      REQUIRE(o["spot_hourly_price"].is_number());  // the fake quotes every type in two zones
      CHECK(o["spot_hourly_price"].get<double>() > 0);
      CHECK(o["spot_hourly_price"].get<double>() < o["hourly_price"].get<double>());
      const std::string source = o["spot_source"];
      CHECK(source.starts_with("EC2 DescribeSpotPriceHistory, Linux/UNIX, lowest zone us-east-1a, as of 20"));
    } else if (o["provider"] == "local") {
      ++local;
      CHECK(o["markets"] == json{"on-demand"});
      CHECK_FALSE(o.contains("spot_hourly_price"));
    }
  }
  CHECK(aws > 0);
  CHECK(local > 0);
}
