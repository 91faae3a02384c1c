// The EC2 provider against the fake AWS, in-process, over HTTPS with a CA made at test time: what is EC2's
// own (the RunInstances shape, ClientToken clashes, eventual consistency, shutdown behavior, prices, SigV4
// refusals). The contract every cloud shares is tests/providers/conformance.
#include <doctest/doctest.h>

#include "providers/aws/aws_provider.h"
#include "tests/fakes/aws/fake_aws_cloud.h"
#include "tests/fakes/aws/fake_catalog.h"
#include "tests/fakes/cloud/request.h"
#include "providers/http/codec.h"
#include "support/run_sync.h"
#include "support/test_tls.h"
#include "support/provider_fixtures.h"

using namespace tsum;
using namespace tsum::providers;
using namespace tsum::providers::aws;
using namespace tsum::providers::aws::fake;
using namespace std::chrono_literals;
using tsum::testing::launch_spec;
using tsum::testing::run_sync;

namespace {

const Credentials kCreds{"AKIDTSUMFAKE", "tsum-fake-secret-key", ""};

struct Cloud {
  testing::TestTls tls;
  FakeClock clock;
  FakeAwsCloud fake;
  std::unique_ptr<AwsProvider> provider;

  explicit Cloud(FakeEc2Options ec2 = {})
      : fake({.server = {.listen = {.cert_file = tls.cert_file(), .key_file = tls.key_file()}, .hang = 5s, .clock = &clock},
              .ec2 = ec2}) {
    REQUIRE(fake.start().ok());
    provider = make(kCreds);
  }

  std::unique_ptr<AwsProvider> make(Credentials creds, std::string image = "ami-0tsum0test",
                                    std::string parameter = "/aws/service/debian/release/bookworm/latest/amd64") {
    AwsOptions o{.credentials = creds, .ec2_endpoint = fake.server().base_url(), .pricing_endpoint = fake.server().base_url(),
                 .image_id = image, .image_parameter = parameter, .ssm_endpoint = fake.server().base_url(),
                 .quotas_endpoint = fake.server().base_url(),
                 .http = testing::fake_http(tls.ca_file()),
                 .attempt_timeout = 1500ms, .clock = &clock};
    auto p = AwsProvider::make(o);
    REQUIRE_MESSAGE(p.ok(), p.error().detail);
    return std::move(*p);
  }
};

Offer offer(const std::string& type = "m5.large") { return {.provider = "aws", .instance_type = type}; }

}  // namespace

TEST_CASE("RunInstances: the AMI, the tags, shutdown behavior terminate, the ClientToken and the user data") {
  Cloud c;
  auto h = run_sync(c.provider->create(offer(), launch_spec("7")));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
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
  CHECK(i.user_data.find(http::base64_encode(http::gzip_compress(launch_spec("7").agent_script))) != std::string::npos);
  c.clock.advance(3);
  CHECK(run_sync(c.provider->describe(*h))->address == c.fake.instances()[0].public_ip);
}

TEST_CASE("the same ClientToken with other parameters is IdempotentParameterMismatch: already_exists") {
  Cloud c;
  REQUIRE(run_sync(c.provider->create(offer(), launch_spec("2"))).ok());
  auto clash = run_sync(c.provider->create(offer("c6i.large"), launch_spec("2")));
  CHECK(clash.code() == Code::already_exists);
  CHECK(clash.error().detail.find("IdempotentParameterMismatch") != std::string::npos);
  CHECK(c.fake.instances().size() == 1);
}

TEST_CASE("shutting-down reads exited with EC2's state; terminated reads gone, also once EC2 forgets it") {
  Cloud c({.terminated_visible_s = 60});
  auto h = run_sync(c.provider->create(offer(), launch_spec("3")));
  REQUIRE(h.ok());
  c.clock.advance(5);
  REQUIRE(run_sync(c.provider->terminate(*h)).ok());
  auto st = run_sync(c.provider->describe(*h));
  REQUIRE(st.ok());
  CHECK(st->state == InstanceState::exited);
  CHECK(st->detail == "EC2 state shutting-down (Client.UserInitiatedShutdown)");
  CHECK_FALSE(st->interrupted);
  c.clock.advance(3);
  CHECK(run_sync(c.provider->describe(*h))->state == InstanceState::gone);  // terminated, still listed
  c.clock.advance(120);
  CHECK(run_sync(c.provider->describe(*h))->state == InstanceState::gone);  // InvalidInstanceID.NotFound now
}

TEST_CASE("an instance EC2 does not list yet reads as pending right after create, as gone much later") {
  Cloud c({.visibility_delay_s = 5});
  auto h = run_sync(c.provider->create(offer(), launch_spec("4")));
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
  auto h = run_sync(c.provider->create(offer(), launch_spec("5")));
  REQUIRE(h.ok());
  c.clock.advance(3);
  REQUIRE(c.fake.guest_shutdown(h->id).ok());
  CHECK(run_sync(c.provider->describe(*h))->state == InstanceState::exited);
  c.clock.advance(3);
  CHECK(run_sync(c.provider->describe(*h))->state == InstanceState::gone);
}

TEST_CASE("offers join instance shapes, Linux on-demand prices and the lowest spot price") {
  Cloud c({.page_size = 4});  // forces pagination of every listing
  auto all = run_sync(c.provider->offers({}));
  REQUIRE_MESSAGE(all.ok(), all.error().detail);
  REQUIRE(all->size() == fake_instance_types().size());
  auto m5 = std::find_if(all->begin(), all->end(), [](const Offer& o) { return o.instance_type == "m5.large"; });
  REQUIRE(m5 != all->end());
  CHECK(m5->hourly_price == doctest::Approx(0.096));  // not the Windows, dedicated or eu-west-1 price
  CHECK(m5->spot_hourly_price == doctest::Approx(0.035));
  CHECK(m5->vcpus == 2);
  CHECK(m5->memory_gib == doctest::Approx(8));
  CHECK(m5->region == "us-east-1");
  CHECK(c.fake.server().requests("GetProducts") >= 3);
  auto gpus = run_sync(c.provider->offers({.gpus = 1}));
  REQUIRE(gpus->size() == 3);
  for (const auto& o : *gpus) CHECK(o.gpu_type.starts_with("NVIDIA "));
  for (const auto& o : *all) CHECK(o.image == "ami-0tsum0test");  // image_id: the image every offer boots
  auto quota = run_sync(c.provider->machine_quota());
  REQUIRE_MESSAGE(quota.ok(), quota.error().detail);
  CHECK(quota->machines == 16);  // Service Quotas' 32 On-Demand Standard vCPUs over 2-vCPU machines
  CHECK(quota->source == "the On-Demand Standard vCPU quota 32 over 2-vCPU machines");

  auto found = c.make(kCreds, "");  // no image_id: each type's AMI from SSM, amd64 or arm64
  auto listed = run_sync(found->offers({}));
  REQUIRE(listed.ok());
  for (const auto& o : *listed) CHECK(o.image.starts_with("ami-0deb12"));
}

TEST_CASE("a refused signature names AWS's code: SignatureDoesNotMatch, AuthFailure") {
  Cloud c;
  auto bad = c.make({"AKIDTSUMFAKE", "not-the-secret", ""});
  CHECK(run_sync(bad->list_tagged("tsum-test")).error().detail.find("SignatureDoesNotMatch") != std::string::npos);
  auto stranger = c.make({"AKIDSOMEONEELSE", "tsum-fake-secret-key", ""});
  CHECK(run_sync(stranger->list_tagged("x")).error().detail.find("AuthFailure") != std::string::npos);
}

TEST_CASE("without an AMI, create boots the one SSM's public parameter names (arm64 for Graviton); an unknown "
          "parameter is refused; a long idempotency token becomes a 64-character ClientToken") {
  Cloud c;
  auto unknown = c.make(kCreds, "", "/aws/service/nobody/publishes/this");
  auto refused = run_sync(unknown->create(offer(), launch_spec("1")));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().detail.find("set image_id or image_parameter") != std::string::npos);
  CHECK(c.fake.instances().empty());
  auto found = c.make(kCreds, "");
  auto x86 = run_sync(found->create(offer(), launch_spec("2")));
  REQUIRE(x86.ok());
  CHECK(x86->data["image_id"].get<std::string>().starts_with("ami-0deb12x"));
  REQUIRE(c.fake.instances().size() == 1);
  CHECK(c.fake.instances()[0].image_id == x86->data["image_id"]);
  REQUIRE(run_sync(found->terminate(*x86)).ok());
  auto arm = run_sync(found->image("", "t4g.small"));  // the fake sells no Graviton type to boot
  REQUIRE(arm.ok());
  CHECK(arm->starts_with("ami-0deb12a"));
  auto long_token = launch_spec("9");
  long_token.idempotency_token = std::string(100, 'x');
  REQUIRE(run_sync(c.provider->create(offer(), long_token)).ok());
  CHECK(c.fake.instances().back().client_token == AwsProvider::client_token(long_token.idempotency_token));
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

TEST_CASE("describe_many asks EC2 once (every page) for all the handles and answers each as describe would") {
  Cloud c({.page_size = 2});
  std::vector<InstanceHandle> hs;
  for (int i = 0; i < 4; ++i) {
    auto h = run_sync(c.provider->create(offer(), launch_spec(std::to_string(30 + i))));
    REQUIRE(h.ok());
    hs.push_back(*h);
  }
  c.clock.advance(3);
  REQUIRE(run_sync(c.provider->terminate(hs[1])).ok());  // shutting-down
  InstanceHandle stranger{"aws", "i-0123456789abcdef0", {{"created_at_s", c.clock.now_s() - 3600}}};
  InstanceHandle fresh{"aws", "i-0fedcba987654321f", {{"created_at_s", c.clock.now_s()}}};  // not visible yet
  std::vector<InstanceHandle> asked = {hs[0], hs[1], stranger, hs[2], hs[3], fresh};

  const int before = c.fake.server().requests("DescribeInstances");
  auto all = run_sync(c.provider->describe_many(asked));
  CHECK(c.fake.server().requests("DescribeInstances") - before == 2);  // one filtered listing, in pages of two
  REQUIRE(all.size() == asked.size());  // each as describe would: the conformance suite
  CHECK(all[0]->state == InstanceState::running);
  CHECK(all[1]->detail == "EC2 state shutting-down (Client.UserInitiatedShutdown)");
  CHECK(all[2]->state == InstanceState::gone);
  CHECK(all[5]->state == InstanceState::pending);

  c.fake.server().inject({.method = "DescribeInstances", .kind = fake_cloud::FaultKind::internal_500, .count = 4});
  auto failed = run_sync(c.provider->describe_many({hs[0], hs[2]}));
  REQUIRE(failed.size() == 2);
  CHECK(failed[0].code() == Code::unavailable);
  CHECK(failed[1].code() == Code::unavailable);
}

TEST_CASE("a spot interruption: the notice on IMDSv2 (token first), then EC2 terminates it with the state reason "
          "Server.SpotInstanceTermination, which describe reads as interrupted") {
  Cloud c;
  auto spec = launch_spec("9");
  spec.market = "spot";
  auto h = run_sync(c.provider->create(offer(), spec));
  REQUIRE(h.ok());
  c.clock.advance(3);
  FakeAwsCloud& api = c.fake;
  auto get = [&](const std::string& path, const std::string& token) {
    http::LoopbackRequest req{"GET", path};
    if (!token.empty()) req.headers.emplace_back("X-aws-ec2-metadata-token", token);
    return api.metadata(req, h->id);
  };
  http::LoopbackRequest put{"PUT", "/latest/api/token", {{"X-aws-ec2-metadata-token-ttl-seconds", "60"}}};
  auto token = api.metadata(put, h->id);
  REQUIRE(token.status == 200);
  CHECK(get("/latest/meta-data/spot/instance-action", "").status == 401);  // IMDSv2: no token, no answer
  CHECK(get("/latest/meta-data/spot/instance-action", token.body).status == 404);  // no notice yet
  CHECK(get("/latest/meta-data/instance-id", token.body).body == h->id);

  // An on-demand instance is never interrupted; this one is, with EC2's two minutes.
  auto on_demand = run_sync(c.provider->create(offer(), launch_spec("10")));
  REQUIRE(on_demand.ok());
  CHECK(c.fake.interrupt(on_demand->id, std::nullopt).code() == Code::invalid_argument);
  REQUIRE(c.fake.interrupt(h->id, std::nullopt).ok());
  auto notice = get("/latest/meta-data/spot/instance-action", token.body);
  REQUIRE(notice.status == 200);
  auto action = nlohmann::json::parse(notice.body);
  CHECK(action["action"] == "terminate");
  CHECK(action["time"] == fake_cloud::iso8601(c.clock.now_s() + 120));
  CHECK(run_sync(c.provider->describe(*h))->state == InstanceState::running);  // until the time comes
  CHECK_FALSE(run_sync(c.provider->describe(*h))->interrupted);
  c.clock.advance(121);
  auto st = run_sync(c.provider->describe(*h));
  REQUIRE(st.ok());
  CHECK(st->state == InstanceState::exited);  // shutting-down
  CHECK(st->interrupted);
  CHECK(st->detail.find("Server.SpotInstanceTermination") != std::string::npos);
  auto many = run_sync(c.provider->describe_many({*h}));
  REQUIRE(many.size() == 1);
  CHECK(many[0]->interrupted);
  CHECK(c.fake.interrupt(h->id, 10).code() == Code::not_found);  // gone already
}

TEST_CASE("a zone: RunInstances places the instance there (Placement.AvailabilityZone); EC2 refuses a zone outside "
          "the region; with a subnet (which is in one zone) the provider refuses to move") {
  Cloud c;
  auto spec = launch_spec("12");
  spec.market = "spot";
  spec.zone = "us-east-1b";
  auto h = run_sync(c.provider->create(offer(), spec));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  REQUIRE(c.fake.instances().size() == 1);
  CHECK(c.fake.instances()[0].zone == "us-east-1b");
  auto plain = run_sync(c.provider->create(offer(), launch_spec("13")));
  REQUIRE(plain.ok());
  CHECK(c.fake.instances()[1].zone == "us-east-1a");  // EC2's choice: the fake's first zone
  auto far = launch_spec("14");
  far.zone = "eu-west-1a";
  auto refused = run_sync(c.provider->create(offer(), far));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().detail.find("Invalid availability zone") != std::string::npos);
  AwsOptions o{.credentials = kCreds, .ec2_endpoint = c.fake.server().base_url(), .image_id = "ami-0tsum0test",
               .subnet_id = "subnet-0abc", .http = testing::fake_http(c.tls.ca_file()), .clock = &c.clock};
  auto with_subnet = AwsProvider::make(o);
  REQUIRE(with_subnet.ok());
  auto moved = run_sync((*with_subnet)->create(offer(), spec));
  REQUIRE_FALSE(moved.ok());
  CHECK(moved.error().detail.find("a subnet is in one zone") != std::string::npos);
}
