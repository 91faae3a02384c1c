// The EC2 provider against the fake cloud, in-process, over HTTPS with a CA made at test time. The fake
// checks every signature, and a FakeClock shared by both drives the instance lifecycle.
#include <doctest/doctest.h>

#include "providers/aws/aws_provider.h"
#include "providers/aws/codec.h"
#include "providers/aws/fake/fake_catalog.h"
#include "providers/aws/fake/fake_cloud.h"
#include "support/guest_net.h"
#include "support/guest_probe.h"
#include "support/run_sync.h"
#include "support/test_tls.h"

using namespace tsum;
using namespace tsum::providers;
using namespace tsum::providers::aws;
using namespace tsum::providers::aws::fake;
using namespace std::chrono_literals;
using tsum::testing::run_sync;

namespace {

const Credentials kCreds{"AKIDTSUMFAKE", "tsum-fake-secret-key", ""};

struct Cloud {
  testing::TestTls tls;
  FakeClock clock;
  FakeCloud fake;
  std::unique_ptr<AwsProvider> provider;

  explicit Cloud(FakeEc2Options ec2 = {}, Credentials creds = kCreds, fake_guest::FakeGuestOptions guest = {})
      : fake({.listen = {.cert_file = tls.cert_file(), .key_file = tls.key_file()},
              .ec2 = ec2, .hang = 5s, .clock = &clock, .guest = guest}) {
    REQUIRE(fake.start().ok());
    provider = make(creds);
  }

  std::unique_ptr<AwsProvider> make(Credentials creds, std::string image = "ami-0tsum0test") {
    AwsOptions o{.credentials = creds, .ec2_endpoint = fake.base_url(), .pricing_endpoint = fake.base_url(),
                 .image_id = image,
                 .http = {.ca_file = tls.ca_file(),
                          .retry = {.max_attempts = 4, .base_delay = 10ms, .max_delay = 50ms, .deadline = 30s}},
                 .attempt_timeout = 1500ms, .clock = &clock};
    auto p = AwsProvider::make(o);
    REQUIRE_MESSAGE(p.ok(), p.error().detail);
    return std::move(*p);
  }
};

LaunchSpec spec(const std::string& run, const std::string& tag = "tsum-test") {
  return {.run_id = run, .tag = tag, .idempotency_token = "run" + run + "-" + tag,
          .agent_script = "#!/bin/sh\necho agent for run " + run + "\n",
          .env = {{"TSUM_RUN_ID", run}, {"TSUM_TOKEN", "it's secret"}}};
}

Offer offer(const std::string& type = "m5.large") { return {.provider = "aws", .instance_type = type}; }

}  // namespace

TEST_CASE("create launches one tagged instance booting the agent; describe follows pending -> running") {
  Cloud c;
  auto h = run_sync(c.provider->create(offer(), spec("7")));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  CHECK(h->provider == "aws");
  auto all = c.fake.instances();
  REQUIRE(all.size() == 1);
  const FakeInstance& i = all[0];
  CHECK(h->id == i.id);
  CHECK(i.instance_type == "m5.large");
  CHECK(i.image_id == "ami-0tsum0test");
  CHECK(i.tags.at("tsum") == "tsum-test");
  CHECK(i.tags.at("tsum-run") == "7");
  CHECK(i.shutdown_behavior == "terminate");
  CHECK(i.client_token == "run7-tsum-test");
  CHECK(i.user_data.starts_with("#cloud-config\n"));
  CHECK(i.user_data.find(base64_encode(gzip_compress(spec("7").agent_script))) != std::string::npos);

  auto st = run_sync(c.provider->describe(*h));
  REQUIRE(st.ok());
  CHECK(st->state == InstanceState::pending);
  c.clock.advance(3);
  st = run_sync(c.provider->describe(*h));
  REQUIRE(st.ok());
  CHECK(st->state == InstanceState::running);
  CHECK(st->address == c.fake.instances()[0].public_ip);
  CHECK_FALSE(st->address.empty());
}

TEST_CASE("a create whose answer was lost is retried with its ClientToken: exactly one instance") {
  Cloud c;
  c.fake.inject({.action = "RunInstances", .kind = FaultKind::lost});
  auto h = run_sync(c.provider->create(offer(), spec("1")));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  CHECK(c.fake.requests("RunInstances") == 2);
  auto all = c.fake.instances();
  REQUIRE(all.size() == 1);
  CHECK(all[0].id == h->id);
}

TEST_CASE("create again with the same token (a daemon retry) returns the same instance; other parameters clash") {
  Cloud c;
  auto first = run_sync(c.provider->create(offer(), spec("2")));
  REQUIRE(first.ok());
  auto again = run_sync(c.provider->create(offer(), spec("2")));
  REQUIRE(again.ok());
  CHECK(again->id == first->id);
  CHECK(c.fake.instances().size() == 1);
  auto clash = run_sync(c.provider->create(offer("c6i.large"), spec("2")));
  CHECK(clash.code() == Code::already_exists);
  CHECK(clash.error().detail.find("IdempotentParameterMismatch") != std::string::npos);
  CHECK(c.fake.instances().size() == 1);
}

TEST_CASE("terminate is idempotent; describe goes exited (shutting-down) -> gone, also once EC2 forgets it") {
  Cloud c({.terminated_visible_s = 60});
  auto h = run_sync(c.provider->create(offer(), spec("3")));
  REQUIRE(h.ok());
  c.clock.advance(5);
  REQUIRE(run_sync(c.provider->terminate(*h)).ok());
  auto st = run_sync(c.provider->describe(*h));
  REQUIRE(st.ok());
  CHECK(st->state == InstanceState::exited);
  CHECK(st->detail == "EC2 state shutting-down");
  CHECK(run_sync(c.provider->terminate(*h)).ok());
  c.clock.advance(3);
  CHECK(run_sync(c.provider->describe(*h))->state == InstanceState::gone);  // terminated
  CHECK(run_sync(c.provider->terminate(*h)).ok());
  c.clock.advance(120);
  st = run_sync(c.provider->describe(*h));  // InvalidInstanceID.NotFound now
  REQUIRE(st.ok());
  CHECK(st->state == InstanceState::gone);
  CHECK(run_sync(c.provider->terminate(*h)).ok());
}

TEST_CASE("an instance EC2 does not list yet reads as pending right after create, as gone much later") {
  Cloud c({.visibility_delay_s = 5});
  auto h = run_sync(c.provider->create(offer(), spec("4")));
  REQUIRE(h.ok());
  auto st = run_sync(c.provider->describe(*h));
  REQUIRE(st.ok());
  CHECK(st->state == InstanceState::pending);
  CHECK(st->detail.find("eventually consistent") != std::string::npos);
  c.clock.advance(6);
  CHECK(run_sync(c.provider->describe(*h))->state == InstanceState::running);
  InstanceHandle stranger{"aws", "i-0123456789abcdef0", {{"created_at_s", c.clock.now_s() - 3600}}};
  CHECK(run_sync(c.provider->describe(stranger))->state == InstanceState::gone);
}

TEST_CASE("a guest power-off terminates the instance (shutdown behavior terminate)") {
  Cloud c;
  auto h = run_sync(c.provider->create(offer(), spec("5")));
  REQUIRE(h.ok());
  c.clock.advance(3);
  REQUIRE(c.fake.guest_shutdown(h->id).ok());
  CHECK(run_sync(c.provider->describe(*h))->state == InstanceState::exited);
  c.clock.advance(3);
  CHECK(run_sync(c.provider->describe(*h))->state == InstanceState::gone);
}

TEST_CASE("list_tagged follows every page and leaves out other tags and terminated instances") {
  Cloud c({.page_size = 2});
  std::vector<std::string> mine;
  for (int i = 0; i < 5; ++i) {
    auto h = run_sync(c.provider->create(offer(), spec(std::to_string(10 + i))));
    REQUIRE(h.ok());
    mine.push_back(h->id);
  }
  REQUIRE(run_sync(c.provider->create(offer(), spec("20", "someone-else"))).ok());
  auto doomed = run_sync(c.provider->list_tagged("tsum-test"));
  REQUIRE(doomed.ok());
  CHECK(doomed->size() == 5);
  REQUIRE(run_sync(c.provider->terminate((*doomed)[0])).ok());
  c.clock.advance(10);
  auto found = run_sync(c.provider->list_tagged("tsum-test"));
  REQUIRE(found.ok());
  REQUIRE(found->size() == 4);
  for (const auto& h : *found) {
    CHECK(h.id != (*doomed)[0].id);
    CHECK(std::find(mine.begin(), mine.end(), h.id) != mine.end());
    CHECK(h.data.value("instance_type", "") == "m5.large");
  }
  CHECK(c.fake.requests("DescribeInstances") == 3 + 2);  // pages of two: 5 instances, then 4
  CHECK(run_sync(c.provider->list_tagged("nobody"))->empty());
}

TEST_CASE("describe_many asks EC2 once (every page) for all the handles and answers each as describe would") {
  Cloud c({.page_size = 2});
  std::vector<InstanceHandle> hs;
  for (int i = 0; i < 4; ++i) {
    auto h = run_sync(c.provider->create(offer(), spec(std::to_string(30 + i))));
    REQUIRE(h.ok());
    hs.push_back(*h);
  }
  c.clock.advance(3);
  REQUIRE(run_sync(c.provider->terminate(hs[1])).ok());  // shutting-down
  InstanceHandle stranger{"aws", "i-0123456789abcdef0", {{"created_at_s", c.clock.now_s() - 3600}}};
  InstanceHandle fresh{"aws", "i-0fedcba987654321f", {{"created_at_s", c.clock.now_s()}}};  // not visible yet
  std::vector<InstanceHandle> asked = {hs[0], hs[1], stranger, hs[2], hs[3], fresh};

  const int before = c.fake.requests("DescribeInstances");
  auto all = run_sync(c.provider->describe_many(asked));
  CHECK(c.fake.requests("DescribeInstances") - before == 2);  // one filtered listing, in pages of two
  REQUIRE(all.size() == asked.size());
  for (size_t i = 0; i < asked.size(); ++i) {
    CAPTURE(i);
    auto one = run_sync(c.provider->describe(asked[i]));
    REQUIRE(all[i].ok());
    REQUIRE(one.ok());
    CHECK(all[i]->state == one->state);
    CHECK(all[i]->detail == one->detail);
    CHECK(all[i]->address == one->address);
  }
  CHECK(all[0]->state == InstanceState::running);
  CHECK(all[1]->detail == "EC2 state shutting-down");
  CHECK(all[2]->state == InstanceState::gone);
  CHECK(all[5]->state == InstanceState::pending);
  CHECK(run_sync(c.provider->describe_many({})).empty());

  c.fake.inject({.action = "DescribeInstances", .kind = FaultKind::internal_500, .count = 4});
  auto failed = run_sync(c.provider->describe_many({hs[0], hs[2]}));
  REQUIRE(failed.size() == 2);
  CHECK(failed[0].code() == Code::unavailable);
  CHECK(failed[1].code() == Code::unavailable);
}

TEST_CASE("throttling (429 with Retry-After, 503 RequestLimitExceeded), 500 and timeouts are retried") {
  Cloud c;
  auto h = run_sync(c.provider->create(offer(), spec("6")));
  REQUIRE(h.ok());
  c.fake.inject({.action = "DescribeInstances", .kind = FaultKind::throttle_429});
  c.fake.inject({.action = "DescribeInstances", .kind = FaultKind::unavailable_503});
  c.fake.inject({.action = "DescribeInstances", .kind = FaultKind::internal_500});
  auto st = run_sync(c.provider->describe(*h));
  REQUIRE_MESSAGE(st.ok(), st.error().detail);
  CHECK(c.fake.requests("DescribeInstances") == 4);
  c.fake.inject({.action = "TerminateInstances", .kind = FaultKind::timeout});
  REQUIRE(run_sync(c.provider->terminate(*h)).ok());
  CHECK(c.fake.requests("TerminateInstances") == 2);
  CHECK(c.fake.pending_faults() == 0);
}

TEST_CASE("throttling that outlasts the retries surfaces as unavailable, naming AWS's code") {
  Cloud c;
  c.fake.inject({.action = "DescribeInstances", .kind = FaultKind::unavailable_503, .count = 10});
  InstanceHandle h{"aws", "i-0123456789abcdef0"};
  auto st = run_sync(c.provider->describe(h));
  REQUIRE_FALSE(st.ok());
  CHECK(st.code() == Code::unavailable);
  CHECK(st.error().detail.find("RequestLimitExceeded") != std::string::npos);
  CHECK(c.fake.requests("DescribeInstances") == 4);  // max_attempts
}

TEST_CASE("offers join instance shapes, Linux on-demand prices and the lowest spot price; the catalog is cached") {
  Cloud c({.page_size = 4});  // forces pagination of every listing
  auto all = run_sync(c.provider->offers({}));
  REQUIRE_MESSAGE(all.ok(), all.error().detail);
  REQUIRE(all->size() == fake_instance_types().size());
  CHECK(std::is_sorted(all->begin(), all->end(), [](const Offer& a, const Offer& b) { return a.hourly_price < b.hourly_price; }));
  auto m5 = std::find_if(all->begin(), all->end(), [](const Offer& o) { return o.instance_type == "m5.large"; });
  REQUIRE(m5 != all->end());
  CHECK(m5->hourly_price == doctest::Approx(0.096));  // not the Windows, dedicated or eu-west-1 price
  CHECK(m5->spot_hourly_price == doctest::Approx(0.035));
  CHECK(m5->vcpus == 2);
  CHECK(m5->memory_gib == doctest::Approx(8));
  CHECK(m5->region == "us-east-1");
  const int listed = c.fake.requests("GetProducts") + c.fake.requests("DescribeInstanceTypes");
  CHECK(c.fake.requests("GetProducts") >= 3);

  auto gpus = run_sync(c.provider->offers({.gpus = 1}));
  REQUIRE(gpus.ok());
  CHECK(gpus->size() == 3);
  for (const auto& o : *gpus) CHECK(o.gpu_type.starts_with("NVIDIA "));
  CHECK(run_sync(c.provider->offers({.min_vcpus = 8}))->size() == 2);
  auto one = run_sync(c.provider->offers({.instance_type = "g4dn.xlarge"}));
  REQUIRE(one->size() == 1);
  CHECK((*one)[0].gpu_type == "NVIDIA T4");
  CHECK(c.fake.requests("GetProducts") + c.fake.requests("DescribeInstanceTypes") == listed);  // cached
  c.clock.advance(3601);
  REQUIRE(run_sync(c.provider->offers({})).ok());
  CHECK(c.fake.requests("GetProducts") + c.fake.requests("DescribeInstanceTypes") > listed);  // expired
}

TEST_CASE("a wrong secret is refused by the fake's signature check and reported as invalid_argument") {
  Cloud c;
  auto bad = c.make({"AKIDTSUMFAKE", "not-the-secret", ""});
  auto st = run_sync(bad->list_tagged("tsum-test"));
  REQUIRE_FALSE(st.ok());
  CHECK(st.code() == Code::invalid_argument);
  CHECK(st.error().detail.find("SignatureDoesNotMatch") != std::string::npos);
  CHECK(c.fake.rejected() == 1);  // not retried
  auto stranger = c.make({"AKIDSOMEONEELSE", "tsum-fake-secret-key", ""});
  CHECK(run_sync(stranger->list_tagged("x")).error().detail.find("AuthFailure") != std::string::npos);
}

TEST_CASE("create refuses what it cannot launch, naming why") {
  Cloud c;
  auto no_ami = c.make(kCreds, "");
  CHECK(run_sync(no_ami->create(offer(), spec("1"))).error().detail.find("image_id") != std::string::npos);
  auto unknown = run_sync(c.provider->create(offer("x9.huge"), spec("1")));
  CHECK(unknown.code() == Code::invalid_argument);
  CHECK(unknown.error().detail.find("InvalidParameterValue") != std::string::npos);
  auto no_token = spec("1");
  no_token.idempotency_token.clear();
  CHECK(run_sync(c.provider->create(offer(), no_token)).code() == Code::invalid_argument);
  auto bad_env = spec("1");
  bad_env.env["NOT-A-NAME"] = "x";
  CHECK(run_sync(c.provider->create(offer(), bad_env)).error().detail.find("NOT-A-NAME") != std::string::npos);
  CHECK(c.fake.instances().empty());

  auto long_token = spec("9");
  long_token.idempotency_token = std::string(100, 'x');
  auto h = run_sync(c.provider->create(offer(), long_token));
  REQUIRE(h.ok());
  CHECK(c.fake.instances()[0].client_token == AwsProvider::client_token(long_token.idempotency_token));
  CHECK(AwsProvider::client_token(long_token.idempotency_token).size() == 64);
}

TEST_CASE("make() checks its options") {
  AwsOptions o{.credentials = kCreds};
  CHECK(AwsProvider::make(o).ok());  // real AWS endpoints by default
  o.ec2_endpoint = "ftp://example.com";
  CHECK(AwsProvider::make(o).error().detail.find("https://") != std::string::npos);
  o.ec2_endpoint = "https://example.com/?x";
  CHECK(AwsProvider::make(o).code() == Code::invalid_argument);
  AwsOptions no_creds;
  CHECK(AwsProvider::make(no_creds).error().detail.find("credentials") != std::string::npos);
  auto base = parse_base_url("https://127.0.0.1:8443/prefix");
  REQUIRE(base.ok());
  CHECK(base->host == "127.0.0.1:8443");
  CHECK(base->url == "https://127.0.0.1:8443/prefix/");
}

TEST_CASE("with a guest root the fake boots the instance's user data: the agent runs; terminate kills it") {
  testing::TestNetwork net;
  testing::TempDir root("tsum-guest");
  const std::string marker = root.path().string();
  const fake_guest::FakeGuestOptions guest{.root = marker, .image = testing::kGuestImage, .network = net.bridge()};
  const auto guests = net.guests();
  Cloud c({}, kCreds, guest);
  c.fake.inject({.action = "RunInstances", .kind = FaultKind::lost});  // booted though the answer is lost
  auto h = run_sync(c.provider->create(offer(), testing::guest_spec("g1", "aws x")));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  const std::string home = marker + "/" + c.fake.instances().at(0).id + "/root";  // its "/"
  CHECK(testing::wait_for_line(home + "/opt/tsum/work/x.out", 10s) == "aws x\n");
  CHECK(testing::count_within(guests, {"sleep", "1000"}, 2, 5s));  // one agent: its child and its own sleep
  REQUIRE(run_sync(c.provider->terminate(*h)).ok());
  CHECK(testing::gone_within(guests, 5s));
}
