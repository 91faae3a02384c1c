// The Yandex Cloud provider against the fake Yandex Cloud, in-process, over HTTPS with a CA made at test
// time: what is Yandex's own (the instance's shape and statuses, operations and their deadlines, adoption by
// name and labels, Billing SKU prices in effect, the fake's refusals). The contract every cloud shares is
// tests/providers/conformance.
#include <doctest/doctest.h>

#include <algorithm>

#include "providers/gce/jwt.h"
#include "providers/http/codec.h"
#include "tests/fakes/yandex/fake_yandex_cloud.h"
#include "providers/yandex/yandex_provider.h"
#include "support/run_sync.h"
#include "support/test_tls.h"
#include "support/provider_fixtures.h"

using namespace tsum;
using namespace tsum::providers;
using namespace tsum::providers::yandex;
using namespace tsum::providers::yandex::fake;
using namespace std::chrono_literals;
using tsum::testing::launch_spec;
using tsum::testing::run_sync;

namespace {

const AuthorizedKey& test_key() {
  static const AuthorizedKey key{.id = "ajefakekey0000000001", .service_account_id = "ajefakesa00000000001",
                                 .private_key_pem = gce::generate_rsa_key_pem().value()};
  return key;
}

struct Cloud {
  testing::TestTls tls;
  FakeClock clock{1.8e9};
  FakeYandexCloud fake;
  std::unique_ptr<YandexProvider> provider;

  explicit Cloud(FakeYandexComputeOptions compute = {}, int sku_page_size = 1000)
      : fake({.server = {.listen = {.cert_file = tls.cert_file(), .key_file = tls.key_file()}, .hang = 3s, .clock = &clock},
              .public_key_pem = test_key().private_key_pem, .compute = compute, .sku_page_size = sku_page_size}) {
    REQUIRE(fake.start().ok());
    provider = make(test_key());
  }

  YandexOptions options(const AuthorizedKey& key) {
    return {.key = key, .folder_id = fake.folder_id(), .subnet_id = "e9bfakesubnet", .image_id = "fd8fakeimage",
            .iam_endpoint = fake.iam_url(), .compute_endpoint = fake.compute_url(), .operation_endpoint = fake.operation_url(),
            .billing_endpoint = fake.billing_url(),
            .http = testing::fake_http(tls.ca_file()),
            .attempt_timeout = 1500ms, .operation_deadline = 5s, .delete_deadline = 5s, .operation_poll = 5ms, .clock = &clock};
  }

  std::unique_ptr<YandexProvider> make(const AuthorizedKey& key) {
    auto p = YandexProvider::make(options(key));
    REQUIRE_MESSAGE(p.ok(), p.error().detail);
    return std::move(*p);
  }
};

Offer offer(const std::string& shape = "standard-v3-2c-8g") { return {.provider = "yandex", .instance_type = shape}; }

}  // namespace

TEST_CASE("create posts one labelled instance booting the agent and waits for its operation; describe follows the lifecycle") {
  Cloud c;
  auto h = run_sync(c.provider->create(offer(), launch_spec("7")));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  CHECK(h->provider == "yandex");
  auto all = c.fake.instances();
  REQUIRE(all.size() == 1);
  const FakeInstance& i = all[0];
  CHECK(h->id == i.id);
  CHECK(h->data.value("name", "") == YandexProvider::instance_name(launch_spec("7")));
  CHECK(h->data.value("folder", "") == c.fake.folder_id());
  CHECK(i.platform_id == "standard-v3");
  CHECK(i.cores == 2);
  CHECK(i.memory_bytes == 8LL << 30);
  CHECK(i.image_id == "fd8fakeimage");
  CHECK(i.subnet_id == "e9bfakesubnet");
  CHECK(i.disk_auto_delete);
  CHECK(i.labels == std::map<std::string, std::string>{{"tsum", "tsum-test"}, {"tsum-run", "7"}});
  CHECK(i.user_data.starts_with("#cloud-config\n"));
  CHECK(i.user_data.find(http::base64_encode(http::gzip_compress(launch_spec("7").agent_script))) != std::string::npos);
  CHECK(c.fake.server().requests("operations.get") == 2);  // done:false once, then done
  CHECK(c.fake.server().tokens_issued() == 1);

  auto st = run_sync(c.provider->describe(*h));
  REQUIRE(st.ok());
  CHECK(st->state == InstanceState::pending);
  CHECK(st->detail == "Yandex status PROVISIONING");
  CHECK(st->address.empty());
  c.clock.advance(1.5);
  st = run_sync(c.provider->describe(*h));
  CHECK(st->detail == "Yandex status STARTING");
  const std::string nat_ip = c.fake.instances().at(0).nat_ip;  // shown from STARTING on
  CHECK(st->address == nat_ip);
  c.clock.advance(1);
  st = run_sync(c.provider->describe(*h));
  CHECK(st->state == InstanceState::running);
  CHECK(st->address == nat_ip);
  CHECK(st->address.starts_with("51.250."));
  REQUIRE(c.fake.guest_shutdown(h->id).ok());
  st = run_sync(c.provider->describe(*h));
  CHECK(st->state == InstanceState::exited);
  CHECK(st->detail == "Yandex status STOPPING");
  c.clock.advance(1);
  CHECK(run_sync(c.provider->describe(*h))->detail == "Yandex status STOPPED");
}

TEST_CASE("create again (a daemon retry) gives the same instance; a name with another run's labels clashes") {
  Cloud c;
  auto first = run_sync(c.provider->create(offer(), launch_spec("2")));
  REQUIRE(first.ok());
  auto again = run_sync(c.provider->create(offer(), launch_spec("2")));
  REQUIRE(again.ok());
  CHECK(again->id == first->id);
  CHECK(c.fake.created() == 1);
  auto stranger = launch_spec("2", "other-tag");
  stranger.idempotency_token = launch_spec("2").idempotency_token;
  auto clash = run_sync(c.provider->create(offer(), stranger));
  CHECK(clash.code() == Code::already_exists);
  CHECK(clash.error().detail.find("another run") != std::string::npos);
}

TEST_CASE("an instance being deleted reads exited and is not adopted; a delete past its deadline is a timeout") {
  Cloud c({.operation_polls = 1000, .operation_s = 60});
  auto o = c.options(test_key());
  o.operation_deadline = o.delete_deadline = 200ms;
  auto p = std::move(YandexProvider::make(o).value());
  CHECK(run_sync(p->create(offer(), launch_spec("8"))).code() == Code::timeout);
  c.clock.advance(61);
  auto h = run_sync(p->create(offer(), launch_spec("8")));  // ALREADY_EXISTS: adopted
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  CHECK(c.fake.created() == 1);
  auto gone = run_sync(p->terminate(*h));
  CHECK(gone.code() == Code::timeout);
  auto st = run_sync(p->describe(*h));
  CHECK(st->state == InstanceState::exited);
  CHECK(st->detail == "Yandex status DELETING");
  CHECK(run_sync(p->terminate(*h)).ok());  // the delete under way is enough
  CHECK(c.fake.server().requests("instances.delete") == 2);
  auto retry = run_sync(p->create(offer(), launch_spec("8")));
  CHECK(retry.code() == Code::unavailable);
  CHECK(retry.error().detail.find("being deleted") != std::string::npos);
  c.clock.advance(61);
  CHECK(run_sync(p->describe(*h))->state == InstanceState::gone);
}

TEST_CASE("offers: shapes priced from every page of Billing SKUs, exactly, at the price in effect") {
  Cloud c({}, 4);  // 14 SKUs: four pages
  auto all = run_sync(c.provider->offers({}));
  REQUIRE_MESSAGE(all.ok(), all.error().detail);
  CHECK(c.fake.server().requests("skus.list") == 4);
  CHECK(all->size() == default_shapes().size());
  auto small = std::find_if(all->begin(), all->end(), [](const Offer& o) { return o.instance_type == "standard-v3-2c-8g"; });
  REQUIRE(small != all->end());
  CHECK(small->hourly_price == doctest::Approx(2 * 1.12 + 8 * 0.2976));  // not 2022's, nor 2099's, nor preemptible
  CHECK(small->currency == "RUB");
  CHECK(small->vcpus == 2);
  CHECK(small->memory_gib == 8);
  CHECK(small->region == "ru-central1-a");
  auto gpus = run_sync(c.provider->offers({.gpus = 2}));
  REQUIRE(gpus->size() == 1);
  CHECK(gpus->at(0).instance_type == "gpu-standard-v3-56c-238g-2gpu");
  CHECK(gpus->at(0).gpu_type == "nvidia-a100");
  CHECK(gpus->at(0).hourly_price == doctest::Approx(56 * 1.12 + 238 * 0.2976 + 2 * 265.0));
}

TEST_CASE("create refuses what it cannot launch, naming why; make() checks its options") {
  Cloud c;
  CHECK(run_sync(c.provider->create(offer("standard-v3-3c-7g"), launch_spec("1"))).error().detail.find("configured shapes") != std::string::npos);
  CHECK(run_sync(c.provider->create(offer(), launch_spec("1", "Bad Tag"))).error().detail.find("label") != std::string::npos);
  auto no_token = launch_spec("1");
  no_token.idempotency_token.clear();
  CHECK(run_sync(c.provider->create(offer(), no_token)).code() == Code::invalid_argument);
  CHECK(c.fake.instances().empty());

  auto o = c.options(test_key());
  CHECK(YandexProvider::make(o).ok());
  for (auto change : {+[](YandexOptions& x) { x.folder_id.clear(); }, +[](YandexOptions& x) { x.subnet_id = "e9b/x"; },
                      +[](YandexOptions& x) { x.image_id = "a/b"; }, +[](YandexOptions& x) { x.zone = "RU"; },
                      +[](YandexOptions& x) { x.shapes.clear(); }, +[](YandexOptions& x) { x.key.id.clear(); },
                      +[](YandexOptions& x) { x.compute_endpoint = "ftp://x"; }}) {
    auto bad = o;
    change(bad);
    CHECK(YandexProvider::make(bad).code() == Code::invalid_argument);
  }
}

TEST_CASE("the fake refuses what Yandex refuses: bad JWT claims, folders, filters, bodies") {
  FakeClock clock{1.8e9};
  FakeYandexCloud fake({.server = {.clock = &clock}, .public_key_pem = test_key().private_key_pem});
  REQUIRE(fake.start().ok());
  http::HttpClient client{{.retry = {.max_attempts = 1}}};
  auto token_for = [&](const std::string& audience, long long iat, const AuthorizedKey& key) {
    http::HttpRequest req{.method = "POST", .url = fake.iam_url(),
                          .body = nlohmann::json{{"jwt", make_ps256_jwt(key, audience, iat).value()}}.dump()};
    auto r = run_sync(client.send(req));
    REQUIRE(r.ok());
    return std::make_pair(r->status, nlohmann::json::parse(r->body));
  };
  CHECK(token_for("https://elsewhere/", 1800000000, test_key()).first == 401);
  CHECK(token_for(fake.iam_url(), 1800000000 - 7200, test_key()).first == 401);  // expired
  auto other_kid = test_key();
  other_kid.id = "ajeother";
  CHECK(token_for(fake.iam_url(), 1800000000, other_kid).second["message"].get<std::string>().find("kid") != std::string::npos);
  auto good = token_for(fake.iam_url(), 1800000000, test_key());
  REQUIRE(good.first == 200);
  CHECK(parse_rfc3339(good.second["expiresAt"].get<std::string>()).value() == doctest::Approx(1.8e9 + 12 * 3600).epsilon(1e-9));
  const std::string bearer = "Bearer " + good.second["iamToken"].get<std::string>();
  auto call = [&](const std::string& method, const std::string& path, const std::string& body = "") {
    http::HttpRequest req{.method = method, .url = fake.server().base_url() + path, .headers = {{"Authorization", bearer}}, .body = body};
    auto r = run_sync(client.send(req));
    REQUIRE(r.ok());
    auto j = nlohmann::json::parse(r->body);
    return std::make_pair(r->status, j.value("code", 0));
  };
  CHECK(call("GET", "/compute/v1/instances") == std::make_pair(400, 3));
  CHECK(call("GET", "/compute/v1/instances?folderId=other") == std::make_pair(403, 7));
  CHECK(call("GET", "/compute/v1/instances?folderId=" + fake.folder_id() + "&filter=" + http::uri_encode("labels.tsum=\"x\"")).first == 400);
  CHECK(call("GET", "/compute/v1/instances/nope") == std::make_pair(404, 5));
  CHECK(call("GET", "/operations/nope") == std::make_pair(404, 5));
  CreateInstance ci{.folder_id = fake.folder_id(), .name = "a", .zone_id = "ru-central1-a", .platform_id = "standard-v3",
                    .cores = 2, .memory_bytes = 4LL << 30, .image_id = "img", .disk_bytes = 20LL << 30, .subnet_id = "s",
                    .user_data = "#cloud-config\n"};
  CHECK(call("POST", "/compute/v1/instances", create_body(ci).dump()).first == 200);
  CHECK(call("POST", "/compute/v1/instances", create_body(ci).dump()) == std::make_pair(409, 6));
  for (auto change : {+[](CreateInstance& x) { x.name = "B"; }, +[](CreateInstance& x) { x.zone_id = "eu-north1-a"; },
                      +[](CreateInstance& x) { x.platform_id = "standard-v9"; }, +[](CreateInstance& x) { x.gpus = 1; },
                      +[](CreateInstance& x) { x.memory_bytes = 12345; }, +[](CreateInstance& x) { x.user_data.clear(); },
                      +[](CreateInstance& x) { x.labels = {{"Bad", "x"}}; }, +[](CreateInstance& x) { x.subnet_id.clear(); }}) {
    auto bad = ci;
    bad.name = "b";
    change(bad);
    CHECK(call("POST", "/compute/v1/instances", create_body(bad).dump()) == std::make_pair(400, 3));
  }
  CHECK(call("GET", "/billing/v1/skus?currency=EUR").first == 400);
  http::HttpRequest anonymous{.method = "GET", .url = fake.compute_url() + "/instances?folderId=" + fake.folder_id()};
  CHECK(run_sync(client.send(anonymous))->status == 401);
}

TEST_CASE("describe_many lists the folder once (every page) for all the handles; an unlisted one is asked alone") {
  Cloud c({.page_size = 2});
  std::vector<InstanceHandle> hs;
  for (int i = 0; i < 4; ++i) {
    auto h = run_sync(c.provider->create(offer(), launch_spec(std::to_string(30 + i))));
    REQUIRE(h.ok());
    hs.push_back(*h);
  }
  c.clock.advance(3);
  REQUIRE(run_sync(c.provider->terminate(hs[1])).ok());  // waits for the delete: gone
  std::vector<InstanceHandle> asked = {hs[0], hs[1], hs[2], hs[3]};

  const int lists = c.fake.server().requests("instances.list"), gets = c.fake.server().requests("instances.get");
  auto all = run_sync(c.provider->describe_many(asked));
  CHECK(c.fake.server().requests("instances.list") - lists == 2);  // three instances, pages of two
  CHECK(c.fake.server().requests("instances.get") - gets == 1);    // only the one the listing lacks
  REQUIRE(all.size() == asked.size());  // each as describe would: the conformance suite
  CHECK(all[0]->state == InstanceState::running);
  CHECK(all[1]->state == InstanceState::gone);

  c.fake.server().inject({.method = "instances.list", .kind = fake_cloud::FaultKind::internal_500, .count = 4});
  auto failed = run_sync(c.provider->describe_many({hs[0], hs[2]}));
  REQUIRE(failed.size() == 2);
  CHECK_FALSE(failed[0].ok());
  CHECK_FALSE(failed[1].ok());
}
