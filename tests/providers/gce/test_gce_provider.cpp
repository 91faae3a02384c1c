// The GCE provider against the fake GCE, in-process, over HTTPS with a CA made at test time: what is GCE's
// own (the insert's shape, adoption by name and labels, zone operations, stockouts, maxRunDuration, the
// Billing Catalog's prices). The contract every cloud shares is tests/providers/conformance.
#include <doctest/doctest.h>

#include <algorithm>
#include <future>
#include <thread>

#include "tests/fakes/gce/fake_gce_cloud.h"
#include "providers/gce/gce_provider.h"
#include "providers/http/codec.h"
#include "support/gce_account.h"
#include "support/run_sync.h"
#include "support/test_tls.h"
#include "support/provider_fixtures.h"

using namespace tsum;
using namespace tsum::providers;
using namespace tsum::providers::gce;
using namespace tsum::providers::gce::fake;
using namespace std::chrono_literals;
using tsum::testing::launch_spec;
using tsum::testing::run_sync;
using tsum::testing::test_account;

namespace {

struct Cloud {
  testing::TestTls tls;
  FakeClock clock;
  FakeGceCloud fake;
  std::unique_ptr<GceProvider> provider;

  explicit Cloud(FakeComputeOptions compute = {}, std::string zone = "us-central1-a")
      : fake({.server = {.listen = {.cert_file = tls.cert_file(), .key_file = tls.key_file()}, .hang = 3s, .clock = &clock},
              .client_email = test_account().client_email, .public_key_pem = *rsa_public_key_pem(test_account().private_key_pem),
              .compute = compute}) {
    REQUIRE(fake.start().ok());
    provider = make(test_account(), zone);
  }

  std::unique_ptr<GceProvider> make(const ServiceAccount& sa, std::string zone = "us-central1-a") {
    GceOptions o{.account = sa, .zone = zone, .compute_endpoint = fake.compute_url(),
                 .billing_endpoint = fake.billing_url(), .token_endpoint = fake.token_url(),
                 .http = testing::fake_http(tls.ca_file()),
                 .attempt_timeout = 1500ms, .operation_deadline = 1500ms, .operation_poll = 10ms, .clock = &clock};
    auto p = GceProvider::make(o);
    REQUIRE_MESSAGE(p.ok(), p.error().detail);
    return std::move(*p);
  }
};

Offer offer(const std::string& type = "e2-standard-2", int gpus = 0) {
  return {.provider = "gce", .instance_type = type, .gpus = gpus};
}

}  // namespace

TEST_CASE("create inserts one labelled instance booting the agent; describe follows PROVISIONING -> RUNNING") {
  Cloud c;
  auto h = run_sync(c.provider->create(offer(), launch_spec("7")));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  CHECK(h->provider == "gce");
  CHECK(h->id == GceProvider::instance_name(launch_spec("7")));
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
  CHECK(i.metadata.at("user-data").find(http::base64_encode(http::gzip_compress(launch_spec("7").agent_script))) != std::string::npos);
  CHECK(c.fake.server().tokens_issued() == 1);

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

TEST_CASE("create again (a daemon retry or restart) adopts the instance of that name when its labels match") {
  Cloud c;
  auto first = run_sync(c.provider->create(offer(), launch_spec("2")));
  REQUIRE(first.ok());
  auto again = run_sync(c.provider->create(offer(), launch_spec("2")));
  REQUIRE(again.ok());
  CHECK(again->id == first->id);
  CHECK(again->data.value("instance_id", "") == first->data.value("instance_id", ""));
  c.clock.advance(4000);  // also long after: alreadyExists, and the labels name this run
  auto later = run_sync(c.provider->create(offer(), launch_spec("2")));
  REQUIRE_MESSAGE(later.ok(), later.error().detail);
  CHECK(later->id == first->id);
  CHECK(c.fake.created() == 1);
  auto stranger = launch_spec("2", "other-tag");
  stranger.idempotency_token = launch_spec("2").idempotency_token;  // same name, someone else's labels
  auto clash = run_sync(c.provider->create(offer(), stranger));
  CHECK(clash.code() == Code::already_exists);
  CHECK(clash.error().detail.find("another run") != std::string::npos);
}

TEST_CASE("create waits for the zone operation, within its deadline") {
  Cloud slow({.operation_s = 100});
  auto h = run_sync(slow.provider->create(offer(), launch_spec("3")));
  REQUIRE_FALSE(h.ok());
  CHECK(h.code() == Code::timeout);
  CHECK(h.error().detail.find("not done within 1500 ms") != std::string::npos);
  CHECK(slow.fake.server().requests("zoneOperations.get") >= 10);
  CHECK(slow.fake.instances().size() == 1);  // the sweep's business now (see below)

  Cloud c({.operation_s = 5});
  auto polled = std::async(std::launch::async, [&] { return run_sync(c.provider->create(offer(), launch_spec("3"))); });
  for (int i = 0; i < 1000 && c.fake.server().requests("zoneOperations.get") == 0; ++i) std::this_thread::sleep_for(10ms);
  c.clock.advance(6);  // the operation finishes while create polls it
  auto done = polled.get();
  REQUIRE_MESSAGE(done.ok(), done.error().detail);
  CHECK(c.fake.server().requests("zoneOperations.get") >= 1);
}

TEST_CASE("a stockout fails the insert operation: unavailable, naming GCE's code; a later create tries again") {
  Cloud c;
  c.fake.set_stockout(true);
  auto h = run_sync(c.provider->create(offer("a2-highgpu-1g", 1), launch_spec("4")));
  REQUIRE_FALSE(h.ok());
  CHECK(h.code() == Code::unavailable);
  CHECK(h.error().detail.find("ZONE_RESOURCE_POOL_EXHAUSTED") != std::string::npos);
  CHECK(c.fake.instances().empty());
  c.fake.set_stockout(false);
  auto retried = run_sync(c.provider->create(offer("a2-highgpu-1g", 1), launch_spec("4")));  // not the failed operation again
  REQUIRE_MESSAGE(retried.ok(), retried.error().detail);
  CHECK(c.fake.created() == 1);
}

TEST_CASE("a zone out of Spot capacity fails a Spot insert there with GCE's stockout; on-demand there and Spot in "
          "another zone go on") {
  Cloud c;
  c.fake.set_spot_capacity("us-central1-a", 0);
  auto spot = launch_spec("21");
  spot.market = "spot";
  spot.zone = "us-central1-a";
  auto h = run_sync(c.provider->create(offer(), spot));
  REQUIRE_FALSE(h.ok());
  CHECK(h.error().detail.find("ZONE_RESOURCE_POOL_EXHAUSTED") != std::string::npos);  // what a recovery skips
  auto standard = launch_spec("22");
  standard.zone = "us-central1-a";
  CHECK(run_sync(c.provider->create(offer(), standard)).ok());
  spot.idempotency_token += "-b";
  spot.zone = "us-central1-b";
  CHECK(run_sync(c.provider->create(offer(), spot)).ok());
  CHECK(c.fake.created() == 2);
}

TEST_CASE("a guest power-off reads exited (TERMINATED); maxRunDuration deletes the instance") {
  Cloud c;
  auto h = run_sync(c.provider->create(offer(), launch_spec("11")));
  REQUIRE(h.ok());
  c.clock.advance(3);
  REQUIRE(c.fake.guest_shutdown("us-central1-a", h->id).ok());
  c.clock.advance(3);
  CHECK(run_sync(c.provider->describe(*h))->detail == "GCE status TERMINATED");
  auto other = run_sync(c.provider->create(offer(), launch_spec("12")));
  REQUIRE(other.ok());
  c.clock.advance(24 * 3600 + 3);
  CHECK(run_sync(c.provider->describe(*other))->state == InstanceState::gone);
}

TEST_CASE("offers sum vCPU, RAM and GPU SKUs per machine type from every page") {
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
  CHECK(c.fake.server().requests("skus.list") == 7);          // 21 SKUs, 3 a page
  CHECK(c.fake.server().requests("machineTypes.list") == 4);  // 10 types
  for (const auto& o : *all)  // the family's current image, asked once with the prices
    CHECK(o.image == "projects/ubuntu-os-cloud/global/images/ubuntu-2204-jammy-v20261120");
  CHECK(c.fake.server().requests("images.getFromFamily") == 1);
  auto quota = run_sync(c.provider->machine_quota());
  REQUIRE_MESSAGE(quota.ok(), quota.error().detail);
  CHECK(quota->machines == 12);  // the region's 24 CPUS over e2-standard-2's 2 (INSTANCES allows 6000)
  CHECK(quota->source == "region us-central1's CPUS quota 24 over 2-vCPU machines");

  Cloud eu({}, "europe-west4-a");
  auto eu_offers = run_sync(eu.provider->offers({}));
  REQUIRE(eu_offers.ok());
  REQUIRE(eu_offers->size() == 2);  // only N1 is priced there
  CHECK((*eu_offers)[0].hourly_price == doctest::Approx(4 * 0.034806 + 15 * 0.004664));
}

TEST_CASE("create refuses what it cannot launch, naming why; make() checks its options") {
  Cloud c;
  CHECK(run_sync(c.provider->create(offer("x9-huge"), launch_spec("1"))).error().detail.find("machineType") != std::string::npos);
  CHECK(run_sync(c.provider->create(offer(), launch_spec("1", "Upper"))).error().detail.find("label") != std::string::npos);
  auto no_token = launch_spec("1");
  no_token.idempotency_token.clear();
  CHECK(run_sync(c.provider->create(offer(), no_token)).code() == Code::invalid_argument);
  CHECK(run_sync(c.provider->create(offer("g2-standard-4"), launch_spec("1"))).code() == Code::invalid_argument);  // GPU offer lost its gpus
  CHECK(c.fake.instances().empty());
  CHECK(GceProvider::instance_name(launch_spec("Run_42")).starts_with("tsum-run-42-"));
  CHECK(valid_resource_name(GceProvider::instance_name(launch_spec(std::string(80, 'x')))));

  GceOptions o{.account = test_account()};
  CHECK(GceProvider::make(o).ok());  // Google's endpoints by default
  o.compute_endpoint = "ftp://x";
  CHECK(GceProvider::make(o).code() == Code::invalid_argument);
  o.compute_endpoint.clear();
  o.label_key = "Bad";
  CHECK(GceProvider::make(o).error().detail.find("label key") != std::string::npos);
  CHECK(GceProvider::make({}).code() == Code::invalid_argument);
}

TEST_CASE("describe_many lists each tag's instances once for all the handles; an untagged or unlisted one is asked alone") {
  Cloud c;
  std::vector<InstanceHandle> hs;
  for (int i = 0; i < 3; ++i) {
    auto h = run_sync(c.provider->create(offer(), launch_spec(std::to_string(30 + i))));
    REQUIRE(h.ok());
    CHECK(h->data.value("tag", "") == "tsum-test");  // what describe_many lists by
    hs.push_back(*h);
  }
  auto other = run_sync(c.provider->create(offer(), launch_spec("40", "someone-else")));
  REQUIRE(other.ok());
  c.clock.advance(3);
  REQUIRE(run_sync(c.provider->terminate(hs[1])).ok());
  c.clock.advance(5);  // hs[1] is gone
  InstanceHandle untagged = hs[2];
  untagged.data.erase("tag");  // as a handle stored before tags were recorded
  std::vector<InstanceHandle> asked = {hs[0], hs[1], *other, untagged, hs[2]};

  const int lists = c.fake.server().requests("instances.aggregatedList"), gets = c.fake.server().requests("instances.get");
  auto all = run_sync(c.provider->describe_many(asked));
  CHECK(c.fake.server().requests("instances.aggregatedList") - lists == 2);  // one per tag
  CHECK(c.fake.server().requests("instances.get") - gets == 2);              // the gone one and the untagged one
  REQUIRE(all.size() == asked.size());  // each as describe would: the conformance suite
  CHECK(all[0]->state == InstanceState::running);
  CHECK(all[1]->state == InstanceState::gone);
  CHECK(all[2]->state == InstanceState::running);
  CHECK(all[4]->state == InstanceState::running);

  c.fake.server().inject({.method = "instances.aggregatedList", .kind = fake_cloud::FaultKind::internal_500, .count = 4});
  auto failed = run_sync(c.provider->describe_many({hs[0], hs[2]}));
  REQUIRE(failed.size() == 2);
  CHECK_FALSE(failed[0].ok());
  CHECK_FALSE(failed[1].ok());
}

TEST_CASE("a Spot VM's preemption: instance/preempted turns TRUE (Metadata-Flavor required), then GCE deletes it and "
          "records compute.instances.preempted, which describe reads as interrupted") {
  Cloud c;
  auto spec = launch_spec("21");
  spec.market = "spot";
  auto h = run_sync(c.provider->create(offer(), spec));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  c.clock.advance(5);
  const std::string id = c.fake.instances().at(0).id;
  auto ask = [&](const std::string& flavor) {
    http::LoopbackRequest req{"GET", "/computeMetadata/v1/instance/preempted"};
    if (!flavor.empty()) req.headers.emplace_back("Metadata-Flavor", flavor);
    return c.fake.metadata(req, id);
  };
  CHECK(ask("").status == 403);
  CHECK(ask("Google").body == "FALSE");
  auto standard = run_sync(c.provider->create(offer(), launch_spec("22")));
  REQUIRE(standard.ok());
  c.clock.advance(5);
  CHECK(c.fake.interrupt(standard->id, std::nullopt).code() == Code::invalid_argument);  // not a Spot VM
  CHECK(c.fake.interrupt("no-such-vm", std::nullopt).code() == Code::not_found);
  REQUIRE(c.fake.interrupt(h->id, std::nullopt).ok());
  CHECK(ask("Google").body == "TRUE");
  auto during = run_sync(c.provider->describe(*h));
  REQUIRE(during.ok());
  CHECK(during->state == InstanceState::running);  // GCE's 30 s
  CHECK_FALSE(during->interrupted);
  c.clock.advance(31);
  auto st = run_sync(c.provider->describe(*h));
  REQUIRE(st.ok());
  CHECK(st->state == InstanceState::exited);  // STOPPING, then gone
  CHECK(st->interrupted);
  CHECK(st->detail.find("compute.instances.preempted") != std::string::npos);
  c.clock.advance(10);
  auto gone = run_sync(c.provider->describe(*h));
  REQUIRE(gone.ok());
  CHECK(gone->state == InstanceState::gone);
  CHECK(gone->interrupted);  // deleted, and GCE's operations say why
  CHECK_FALSE(run_sync(c.provider->describe(*standard))->interrupted);
  auto many = run_sync(c.provider->describe_many({*h, *standard}));
  REQUIRE(many.size() == 2);
  CHECK(many[0]->interrupted);
  CHECK_FALSE(many[1]->interrupted);
}

TEST_CASE("a zone: the instance goes to that zone of the project, describe and terminate follow it there") {
  Cloud c;
  auto spec = launch_spec("31");
  spec.market = "spot";
  spec.zone = "us-central1-b";
  auto h = run_sync(c.provider->create(offer(), spec));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  CHECK(h->data.value("zone", "") == "us-central1-b");
  REQUIRE(c.fake.instances().size() == 1);
  CHECK(c.fake.instances()[0].zone == "us-central1-b");
  c.clock.advance(5);
  auto st = run_sync(c.provider->describe(*h));
  REQUIRE(st.ok());
  CHECK(st->state == InstanceState::running);
  REQUIRE(run_sync(c.provider->terminate(*h)).ok());
  auto bad = launch_spec("32");
  bad.zone = "Not A Zone";
  CHECK(run_sync(c.provider->create(offer(), bad)).code() == Code::invalid_argument);
  auto unknown = launch_spec("33");
  unknown.zone = "asia-east1-a";  // not one of the fake project's zones: GCE says so
  auto refused = run_sync(c.provider->create(offer(), unknown));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().detail.find("Unknown zone") != std::string::npos);
}
