// The GCE provider against the fake GCE, in-process, over HTTPS with a CA made at test time. The fake checks
// the service account's JWT at its token endpoint and the bearer token on every call; a FakeClock shared by
// both drives the instance lifecycle and token expiry.
#include <doctest/doctest.h>

#include <algorithm>
#include <future>
#include <thread>

#include "providers/aws/codec.h"
#include "providers/gce/fake/fake_gce_cloud.h"
#include "providers/gce/gce_provider.h"
#include "support/gce_account.h"
#include "support/guest_net.h"
#include "support/guest_probe.h"
#include "support/run_sync.h"
#include "support/test_tls.h"

using namespace tsum;
using namespace tsum::providers;
using namespace tsum::providers::gce;
using namespace tsum::providers::gce::fake;
using namespace std::chrono_literals;
using tsum::testing::run_sync;
using tsum::testing::test_account;

namespace {

struct Cloud {
  testing::TestTls tls;
  FakeClock clock;
  FakeGceCloud fake;
  std::unique_ptr<GceProvider> provider;

  explicit Cloud(FakeComputeOptions compute = {}, std::string zone = "us-central1-a",
                 fake_guest::FakeGuestOptions guest = {})
      : fake({.listen = {.cert_file = tls.cert_file(), .key_file = tls.key_file()},
              .client_email = test_account().client_email, .public_key_pem = *rsa_public_key_pem(test_account().private_key_pem),
              .compute = compute, .hang = 3s, .guest = guest, .clock = &clock}) {
    REQUIRE(fake.start().ok());
    provider = make(test_account(), zone);
  }

  std::unique_ptr<GceProvider> make(const ServiceAccount& sa, std::string zone = "us-central1-a") {
    GceOptions o{.account = sa, .zone = zone, .compute_endpoint = fake.compute_url(),
                 .billing_endpoint = fake.billing_url(), .token_endpoint = fake.token_url(),
                 .http = {.ca_file = tls.ca_file(),
                          .retry = {.max_attempts = 4, .base_delay = 10ms, .max_delay = 50ms, .deadline = 30s}},
                 .attempt_timeout = 1500ms, .operation_deadline = 1500ms, .operation_poll = 10ms, .clock = &clock};
    auto p = GceProvider::make(o);
    REQUIRE_MESSAGE(p.ok(), p.error().detail);
    return std::move(*p);
  }
};

LaunchSpec spec(const std::string& run, const std::string& tag = "tsum-test") {
  return {.run_id = run, .tag = tag, .idempotency_token = "run" + run + "-" + tag,
          .agent_script = "#!/bin/sh\necho agent for run " + run + "\n",
          .env = {{"TSUM_RUN_ID", run}, {"TSUM_TOKEN", "it's secret"}}};
}

Offer offer(const std::string& type = "e2-standard-2", int gpus = 0) {
  return {.provider = "gce", .instance_type = type, .gpus = gpus};
}

}  // namespace

TEST_CASE("create inserts one labelled instance booting the agent; describe follows PROVISIONING -> RUNNING") {
  Cloud c;
  auto h = run_sync(c.provider->create(offer(), spec("7")));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  CHECK(h->provider == "gce");
  CHECK(h->id == GceProvider::instance_name(spec("7")));
  CHECK(h->data.value("zone", "") == "us-central1-a");
  auto all = c.fake.instances();
  REQUIRE(all.size() == 1);
  const FakeGceInstance& i = all[0];
  CHECK(i.name == h->id);
  CHECK(i.id == h->data.value("instance_id", ""));
  CHECK(i.machine_type == "e2-standard-2");
  CHECK(i.source_image.find("ubuntu") != std::string::npos);
  CHECK(i.labels.at("tsum") == "tsum-test");
  CHECK(i.labels.at("tsum-run") == "7");
  CHECK(i.max_run_duration_s == 24 * 3600);
  CHECK(i.termination_action == "DELETE");
  CHECK(i.metadata.at("user-data").starts_with("#cloud-config\n"));
  CHECK(i.metadata.at("user-data").find(aws::base64_encode(aws::gzip_compress(spec("7").agent_script))) != std::string::npos);
  CHECK(c.fake.tokens_issued() == 1);

  auto st = run_sync(c.provider->describe(*h));
  REQUIRE(st.ok());
  CHECK(st->state == InstanceState::pending);
  CHECK(st->detail == "GCE status PROVISIONING");
  CHECK(st->address == i.internal_ip);  // no natIP before STAGING
  c.clock.advance(1.5);
  CHECK(run_sync(c.provider->describe(*h))->detail == "GCE status STAGING");
  c.clock.advance(1);
  st = run_sync(c.provider->describe(*h));
  CHECK(st->state == InstanceState::running);
  CHECK(st->address == i.nat_ip);
  CHECK(st->address.starts_with("34."));
}

TEST_CASE("an insert whose answer was lost is retried with its requestId: exactly one instance") {
  Cloud c;
  c.fake.inject({.action = "instances.insert", .kind = FaultKind::lost});
  auto h = run_sync(c.provider->create(offer(), spec("1")));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  CHECK(c.fake.requests("instances.insert") == 2);
  CHECK(c.fake.created() == 1);
  REQUIRE(c.fake.instances().size() == 1);
  CHECK(c.fake.instances()[0].name == h->id);
}

TEST_CASE("create again (a daemon retry or restart) adopts the instance of that name when its labels match") {
  Cloud c;
  auto first = run_sync(c.provider->create(offer(), spec("2")));
  REQUIRE(first.ok());
  auto again = run_sync(c.provider->create(offer(), spec("2")));
  REQUIRE(again.ok());
  CHECK(again->id == first->id);
  CHECK(again->data.value("instance_id", "") == first->data.value("instance_id", ""));
  c.clock.advance(4000);  // also long after: alreadyExists, and the labels name this run
  auto later = run_sync(c.provider->create(offer(), spec("2")));
  REQUIRE_MESSAGE(later.ok(), later.error().detail);
  CHECK(later->id == first->id);
  CHECK(c.fake.created() == 1);
  auto stranger = spec("2", "other-tag");
  stranger.idempotency_token = spec("2").idempotency_token;  // same name, someone else's labels
  auto clash = run_sync(c.provider->create(offer(), stranger));
  CHECK(clash.code() == Code::already_exists);
  CHECK(clash.error().detail.find("another run") != std::string::npos);
}

TEST_CASE("create waits for the zone operation, within its deadline") {
  Cloud slow({.operation_s = 100});
  auto h = run_sync(slow.provider->create(offer(), spec("3")));
  REQUIRE_FALSE(h.ok());
  CHECK(h.code() == Code::timeout);
  CHECK(h.error().detail.find("not done within 1500 ms") != std::string::npos);
  CHECK(slow.fake.requests("zoneOperations.get") >= 10);
  CHECK(slow.fake.instances().size() == 1);  // the sweep's business now (see below)

  Cloud c({.operation_s = 5});
  auto polled = std::async(std::launch::async, [&] { return run_sync(c.provider->create(offer(), spec("3"))); });
  for (int i = 0; i < 1000 && c.fake.requests("zoneOperations.get") == 0; ++i) std::this_thread::sleep_for(10ms);
  c.clock.advance(6);  // the operation finishes while create polls it
  auto done = polled.get();
  REQUIRE_MESSAGE(done.ok(), done.error().detail);
  CHECK(c.fake.requests("zoneOperations.get") >= 1);
}

TEST_CASE("a stockout fails the insert operation: unavailable, naming GCE's code; a later create tries again") {
  Cloud c;
  c.fake.set_stockout(true);
  auto h = run_sync(c.provider->create(offer("a2-highgpu-1g", 1), spec("4")));
  REQUIRE_FALSE(h.ok());
  CHECK(h.code() == Code::unavailable);
  CHECK(h.error().detail.find("ZONE_RESOURCE_POOL_EXHAUSTED") != std::string::npos);
  CHECK(c.fake.instances().empty());
  c.fake.set_stockout(false);
  auto retried = run_sync(c.provider->create(offer("a2-highgpu-1g", 1), spec("4")));  // not the failed operation again
  REQUIRE_MESSAGE(retried.ok(), retried.error().detail);
  CHECK(c.fake.created() == 1);
}

TEST_CASE("terminate deletes: STOPPING reads exited, then gone; terminating again succeeds") {
  Cloud c;
  auto h = run_sync(c.provider->create(offer(), spec("5")));
  REQUIRE(h.ok());
  c.clock.advance(3);
  REQUIRE(run_sync(c.provider->terminate(*h)).ok());
  auto st = run_sync(c.provider->describe(*h));
  REQUIRE(st.ok());
  CHECK(st->state == InstanceState::exited);
  CHECK(st->detail == "GCE status STOPPING");
  CHECK(run_sync(c.provider->terminate(*h)).ok());
  c.clock.advance(3);
  st = run_sync(c.provider->describe(*h));
  REQUIRE(st.ok());
  CHECK(st->state == InstanceState::gone);
  CHECK(run_sync(c.provider->terminate(*h)).ok());  // 404: deleted already
  CHECK(c.fake.instances().empty());
}

TEST_CASE("a delete that fails three times (503, 500, 429) then succeeds") {
  Cloud c;
  auto h = run_sync(c.provider->create(offer(), spec("6")));
  REQUIRE(h.ok());
  c.fake.inject({.action = "instances.delete", .kind = FaultKind::unavailable_503});
  c.fake.inject({.action = "instances.delete", .kind = FaultKind::internal_500});
  c.fake.inject({.action = "instances.delete", .kind = FaultKind::throttle_429});
  REQUIRE(run_sync(c.provider->terminate(*h)).ok());
  CHECK(c.fake.requests("instances.delete") == 4);
  CHECK(c.fake.pending_faults() == 0);
  CHECK(c.fake.instances().at(0).status == "STOPPING");
}

TEST_CASE("leak guard: a create whose answers are all lost leaves an instance the label sweep finds and deletes") {
  Cloud c;
  c.fake.inject({.action = "instances.insert", .kind = FaultKind::lost, .count = 4});
  auto h = run_sync(c.provider->create(offer(), spec("8")));
  REQUIRE_FALSE(h.ok());
  CHECK(h.code() == Code::unavailable);
  CHECK(c.fake.created() == 1);  // four tries, one instance: the requestId held
  auto strays = run_sync(c.provider->list_tagged("tsum-test"));
  REQUIRE(strays.ok());
  REQUIRE(strays->size() == 1);
  CHECK((*strays)[0].id == GceProvider::instance_name(spec("8")));
  REQUIRE(run_sync(c.provider->terminate((*strays)[0])).ok());
  c.clock.advance(3);
  CHECK(run_sync(c.provider->list_tagged("tsum-test"))->empty());
  CHECK(c.fake.instances().empty());
}

TEST_CASE("list_tagged follows every page of the aggregated list and leaves out other labels") {
  Cloud c({.page_size = 2});
  for (int i = 0; i < 5; ++i) REQUIRE(run_sync(c.provider->create(offer(), spec(std::to_string(10 + i)))).ok());
  REQUIRE(run_sync(c.provider->create(offer(), spec("20", "someone-else"))).ok());
  auto found = run_sync(c.provider->list_tagged("tsum-test"));
  REQUIRE(found.ok());
  CHECK(found->size() == 5);
  for (const auto& h : *found) {
    CHECK(h.provider == "gce");
    CHECK(h.data.value("zone", "") == "us-central1-a");
    CHECK(h.data.value("machine_type", "") == "e2-standard-2");
  }
  CHECK(c.fake.requests("instances.aggregatedList") == 3);
  CHECK(run_sync(c.provider->list_tagged("nobody"))->empty());
  CHECK(run_sync(c.provider->list_tagged("Bad\"Tag")).code() == Code::invalid_argument);
}

TEST_CASE("describe_many lists each tag's instances once for all the handles; an untagged or unlisted one is asked alone") {
  Cloud c;
  std::vector<InstanceHandle> hs;
  for (int i = 0; i < 3; ++i) {
    auto h = run_sync(c.provider->create(offer(), spec(std::to_string(30 + i))));
    REQUIRE(h.ok());
    CHECK(h->data.value("tag", "") == "tsum-test");  // what describe_many lists by
    hs.push_back(*h);
  }
  auto other = run_sync(c.provider->create(offer(), spec("40", "someone-else")));
  REQUIRE(other.ok());
  c.clock.advance(3);
  REQUIRE(run_sync(c.provider->terminate(hs[1])).ok());
  c.clock.advance(5);  // hs[1] is gone
  InstanceHandle untagged = hs[2];
  untagged.data.erase("tag");  // as a handle stored before tags were recorded
  std::vector<InstanceHandle> asked = {hs[0], hs[1], *other, untagged, hs[2]};

  const int lists = c.fake.requests("instances.aggregatedList"), gets = c.fake.requests("instances.get");
  auto all = run_sync(c.provider->describe_many(asked));
  CHECK(c.fake.requests("instances.aggregatedList") - lists == 2);  // one per tag
  CHECK(c.fake.requests("instances.get") - gets == 2);              // the gone one and the untagged one
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
  CHECK(all[1]->state == InstanceState::gone);
  CHECK(all[2]->state == InstanceState::running);
  CHECK(all[4]->state == InstanceState::running);
  CHECK(run_sync(c.provider->describe_many({})).empty());

  c.fake.inject({.action = "instances.aggregatedList", .kind = FaultKind::internal_500, .count = 4});
  auto failed = run_sync(c.provider->describe_many({hs[0], hs[2]}));
  REQUIRE(failed.size() == 2);
  CHECK_FALSE(failed[0].ok());
  CHECK_FALSE(failed[1].ok());
}

TEST_CASE("429 with Retry-After, 500 and a timeout are retried; throttling that outlasts the retries is unavailable") {
  Cloud c;
  auto h = run_sync(c.provider->create(offer(), spec("9")));
  REQUIRE(h.ok());
  c.fake.inject({.action = "instances.get", .kind = FaultKind::throttle_429});
  c.fake.inject({.action = "instances.get", .kind = FaultKind::internal_500});
  c.fake.inject({.action = "instances.get", .kind = FaultKind::timeout});
  auto st = run_sync(c.provider->describe(*h));
  REQUIRE_MESSAGE(st.ok(), st.error().detail);
  CHECK(c.fake.requests("instances.get") == 4);
  c.fake.inject({.action = "instances.get", .kind = FaultKind::unavailable_503, .count = 10});
  st = run_sync(c.provider->describe(*h));
  REQUIRE_FALSE(st.ok());
  CHECK(st.code() == Code::unavailable);
  CHECK(st.error().detail.find("backendError") != std::string::npos);
}

TEST_CASE("a guest power-off reads exited (TERMINATED); maxRunDuration deletes the instance") {
  Cloud c;
  auto h = run_sync(c.provider->create(offer(), spec("11")));
  REQUIRE(h.ok());
  c.clock.advance(3);
  REQUIRE(c.fake.guest_shutdown("us-central1-a", h->id).ok());
  c.clock.advance(3);
  CHECK(run_sync(c.provider->describe(*h))->detail == "GCE status TERMINATED");
  auto other = run_sync(c.provider->create(offer(), spec("12")));
  REQUIRE(other.ok());
  c.clock.advance(24 * 3600 + 3);
  CHECK(run_sync(c.provider->describe(*other))->state == InstanceState::gone);
}

TEST_CASE("tokens: one per hour, refreshed before expiry and after a revocation") {
  Cloud c;
  auto h = run_sync(c.provider->create(offer(), spec("13")));
  REQUIRE(h.ok());
  REQUIRE(run_sync(c.provider->describe(*h)).ok());
  CHECK(c.fake.tokens_issued() == 1);
  c.clock.advance(3400);  // within 5 minutes of expiry
  REQUIRE(run_sync(c.provider->describe(*h)).ok());
  CHECK(c.fake.tokens_issued() == 2);
  c.fake.revoke_tokens();
  REQUIRE(run_sync(c.provider->describe(*h)).ok());  // 401, a new token, the call again
  CHECK(c.fake.tokens_issued() == 3);
  CHECK(c.fake.rejected() == 1);
}

TEST_CASE("a key the fake does not trust is refused at the token endpoint; no credential reaches the message") {
  Cloud c;
  ServiceAccount impostor = test_account();
  impostor.private_key_pem = *generate_rsa_key_pem();
  auto bad = c.make(impostor);
  auto r = run_sync(bad->list_tagged("tsum-test"));
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == Code::invalid_argument);
  CHECK(r.error().detail.find("invalid_grant") != std::string::npos);
  CHECK(r.error().detail.find("Invalid JWT Signature") != std::string::npos);
  CHECK(r.error().detail.find("[redacted]") != std::string::npos);  // the fake quoted the assertion back
  CHECK(r.error().detail.find("eyJ") == std::string::npos);         // no JWT (base64url of '{"') survives
  CHECK(r.error().detail.find("PRIVATE KEY") == std::string::npos);
  CHECK(c.fake.rejected() == 1);  // not retried
  CHECK(c.fake.requests("instances.aggregatedList") == 0);

  c.fake.revoke_tokens(/*refuse_all=*/true);
  auto refused = run_sync(c.provider->list_tagged("tsum-test"));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().detail.find("HTTP 401") != std::string::npos);
  CHECK(refused.error().detail.find("[redacted]") != std::string::npos);  // the bearer token the fake quoted
  CHECK(refused.error().detail.find("ya29.") == std::string::npos);
}

TEST_CASE("offers sum vCPU, RAM and GPU SKUs per machine type from every page; the catalog is cached") {
  Cloud c({.page_size = 3});  // forces pagination of machine types and SKUs
  auto all = run_sync(c.provider->offers({}));
  REQUIRE_MESSAGE(all.ok(), all.error().detail);
  std::vector<std::string> names;
  for (const auto& o : *all) names.push_back(o.instance_type);
  CHECK(names == std::vector<std::string>{"e2-standard-2", "e2-standard-4", "n1-standard-4", "n1-standard-8",
                                          "n2-standard-8", "g2-standard-4", "a2-highgpu-1g", "a2-highgpu-2g"});
  auto n1 = std::find_if(all->begin(), all->end(), [](const Offer& o) { return o.instance_type == "n1-standard-4"; });
  CHECK(n1->hourly_price == 0.189999);  // 4 x 0.031611 + 15 GiB x 0.004237
  CHECK(n1->region == "us-central1-a");
  auto a2 = std::find_if(all->begin(), all->end(), [](const Offer& o) { return o.instance_type == "a2-highgpu-1g"; });
  CHECK(a2->hourly_price == doctest::Approx(12 * 0.031611 + 85 * 0.004237 + 2.933908).epsilon(1e-12));
  CHECK(a2->gpu_type == "nvidia-tesla-a100");
  CHECK(c.fake.requests("skus.list") == 7);          // 21 SKUs, 3 a page
  CHECK(c.fake.requests("machineTypes.list") == 4);  // 10 types
  CHECK(run_sync(c.provider->offers({.gpus = 2}))->size() == 1);
  CHECK(run_sync(c.provider->offers({.min_vcpus = 8}))->size() == 4);
  CHECK(c.fake.requests("skus.list") == 7);  // cached
  c.clock.advance(3601);
  REQUIRE(run_sync(c.provider->offers({})).ok());
  CHECK(c.fake.requests("skus.list") == 14);

  Cloud eu({}, "europe-west4-a");
  auto eu_offers = run_sync(eu.provider->offers({}));
  REQUIRE(eu_offers.ok());
  REQUIRE(eu_offers->size() == 2);  // only N1 is priced there
  CHECK((*eu_offers)[0].hourly_price == doctest::Approx(4 * 0.034806 + 15 * 0.004664));
}

TEST_CASE("create refuses what it cannot launch, naming why; make() checks its options") {
  Cloud c;
  CHECK(run_sync(c.provider->create(offer("x9-huge"), spec("1"))).error().detail.find("machineType") != std::string::npos);
  CHECK(run_sync(c.provider->create(offer(), spec("1", "Upper"))).error().detail.find("label") != std::string::npos);
  auto no_token = spec("1");
  no_token.idempotency_token.clear();
  CHECK(run_sync(c.provider->create(offer(), no_token)).code() == Code::invalid_argument);
  CHECK(run_sync(c.provider->create(offer("g2-standard-4"), spec("1"))).code() == Code::invalid_argument);  // GPU offer lost its gpus
  CHECK(c.fake.instances().empty());
  CHECK(GceProvider::instance_name(spec("Run_42")).starts_with("tsum-run-42-"));
  CHECK(valid_resource_name(GceProvider::instance_name(spec(std::string(80, 'x')))));

  GceOptions o{.account = test_account()};
  CHECK(GceProvider::make(o).ok());  // Google's endpoints by default
  o.compute_endpoint = "ftp://x";
  CHECK(GceProvider::make(o).code() == Code::invalid_argument);
  o.compute_endpoint.clear();
  o.label_key = "Bad";
  CHECK(GceProvider::make(o).error().detail.find("label key") != std::string::npos);
  CHECK(GceProvider::make({}).code() == Code::invalid_argument);
}

TEST_CASE("with a guest root the fake boots the instance's user data: the agent runs; terminate kills it") {
  testing::TestNetwork net;
  testing::TempDir root("tsum-guest");
  const std::string marker = root.path().string();
  const fake_guest::FakeGuestOptions guest{.root = marker, .image = testing::kGuestImage, .network = net.bridge()};
  const auto guests = net.guests();
  Cloud c({}, "us-central1-a", guest);
  auto h = run_sync(c.provider->create(offer(), testing::guest_spec("g1", "gce x")));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  const std::string home = marker + "/" + c.fake.instances().at(0).id + "/root";  // its "/"
  CHECK(testing::wait_for_line(home + "/opt/tsum/work/x.out", 10s) == "gce x\n");
  CHECK(testing::count_within(guests, {"sleep", "1000"}, 2, 5s));  // one agent: its child and its own sleep
  REQUIRE(run_sync(c.provider->terminate(*h)).ok());
  CHECK(testing::gone_within(guests, 5s));
}
