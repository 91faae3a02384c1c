// The Hetzner Cloud provider against the fake Hetzner, in-process, over HTTPS with a CA made at test time:
// what is Hetzner's own (the server's shape, adoption by name and labels, a powered-off server that still
// bills, exact decimal prices per location, label selectors and page numbers). The contract every cloud
// shares is tests/providers/conformance.
#include <doctest/doctest.h>

#include <algorithm>

#include "tests/fakes/hetzner/fake_hetzner_cloud.h"
#include "providers/hetzner/hetzner_provider.h"
#include "providers/http/codec.h"
#include "providers/http/http_client.h"
#include "support/run_sync.h"
#include "support/test_tls.h"
#include "support/provider_fixtures.h"

using namespace tsum;
using namespace tsum::providers;
using namespace tsum::providers::hetzner;
using namespace tsum::providers::hetzner::fake;
using namespace std::chrono_literals;
using tsum::testing::launch_spec;
using tsum::testing::run_sync;

namespace {

const std::string kToken = "hcloud-test-token-0123456789";

struct Cloud {
  testing::TestTls tls;
  FakeClock clock;
  FakeHetznerCloud fake;
  std::unique_ptr<HetznerProvider> provider;

  explicit Cloud(FakeServersOptions servers = {}, std::string location = "fsn1")
      : fake({.server = {.listen = {.cert_file = tls.cert_file(), .key_file = tls.key_file()}, .hang = 3s, .clock = &clock},
              .token = kToken, .servers = servers}) {
    REQUIRE(fake.start().ok());
    provider = make(kToken, location);
  }

  std::unique_ptr<HetznerProvider> make(const std::string& token, std::string location = "fsn1") {
    HetznerOptions o{.token = token, .endpoint = fake.api_url(), .location = location,
                     .http = testing::fake_http(tls.ca_file()),
                     .attempt_timeout = 1500ms, .clock = &clock};
    auto p = HetznerProvider::make(o);
    REQUIRE_MESSAGE(p.ok(), p.error().detail);
    return std::move(*p);
  }
};

Offer offer(const std::string& type = "cx22") { return {.provider = "hetzner", .instance_type = type}; }

}  // namespace

TEST_CASE("decimal prices parse exactly, or not at all") {
  CHECK(parse_decimal("0.0109000000", 12).value() == 10900000000LL);
  CHECK(parse_decimal("0.0071400000000000", 12).value() == 7140000000LL);  // zeros past the scale are fine
  CHECK(parse_decimal("48.99", 12).value() == 48990000000000LL);
  CHECK(parse_decimal("7", 2).value() == 700);
  CHECK(static_cast<double>(parse_decimal("0.0109000000", 12).value()) / 1e12 == 0.0109);
  for (const char* bad : {"", ".5", "5.", "-0.1", "1e-3", "0.1.2", " 1", "0,5", "0.0000000000001", "99999999999999999999"})
    CHECK_MESSAGE(parse_decimal(bad, 12).code() == Code::invalid_argument, bad);
}

TEST_CASE("create posts one labelled server booting the agent; describe follows initializing -> running") {
  Cloud c;
  auto h = run_sync(c.provider->create(offer(), launch_spec("7")));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  CHECK(h->provider == "hetzner");
  auto all = c.fake.servers();
  REQUIRE(all.size() == 1);
  const FakeServer& s = all[0];
  CHECK(h->id == std::to_string(s.id));
  CHECK(s.name == HetznerProvider::server_name(launch_spec("7")));
  CHECK(s.server_type == "cx22");
  CHECK(s.image == "ubuntu-22.04");
  CHECK(s.location == "fsn1");
  CHECK(s.labels.at("tsum") == "tsum-test");
  CHECK(s.labels.at("tsum-run") == "7");
  CHECK(s.user_data.starts_with("#cloud-config\n"));
  CHECK(s.user_data.find(http::base64_encode(http::gzip_compress(launch_spec("7").agent_script))) != std::string::npos);
  std::vector<std::string> keys;
  for (const auto& [k, _] : h->data.items()) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"created_at_s", "location", "name", "server_type"});  // no root_password

  auto st = run_sync(c.provider->describe(*h));
  REQUIRE(st.ok());
  CHECK(st->state == InstanceState::pending);
  CHECK(st->detail == "Hetzner status initializing");
  c.clock.advance(1.5);
  CHECK(run_sync(c.provider->describe(*h))->detail == "Hetzner status starting");
  c.clock.advance(1);
  st = run_sync(c.provider->describe(*h));
  CHECK(st->state == InstanceState::running);
  CHECK(st->address == s.ipv4);
}

TEST_CASE("create again (a daemon retry) gives the same server; a name with another run's labels clashes") {
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
  REQUIRE(run_sync(c.provider->terminate(*first)).ok());
  auto dying = run_sync(c.provider->create(offer(), launch_spec("2")));  // not a handle to a server on its way out
  CHECK(dying.code() == Code::unavailable);
  CHECK(dying.error().detail.find("being deleted") != std::string::npos);
  c.clock.advance(3);
  auto fresh = run_sync(c.provider->create(offer(), launch_spec("2")));
  REQUIRE(fresh.ok());
  CHECK(fresh->id != first->id);
}

TEST_CASE("terminate deletes: deleting reads exited, then gone; a powered-off server is still there until deleted") {
  Cloud c;
  auto h = run_sync(c.provider->create(offer(), launch_spec("3")));
  REQUIRE(h.ok());
  c.clock.advance(3);
  REQUIRE(c.fake.guest_shutdown(std::stoll(h->id)).ok());
  auto st = run_sync(c.provider->describe(*h));
  CHECK(st->state == InstanceState::exited);
  CHECK(st->detail == "Hetzner status off");
  c.clock.advance(3600);
  CHECK(run_sync(c.provider->describe(*h))->detail == "Hetzner status off");  // still billed
  REQUIRE(run_sync(c.provider->terminate(*h)).ok());
  CHECK(run_sync(c.provider->describe(*h))->detail == "Hetzner status deleting");
  CHECK(run_sync(c.provider->terminate(*h)).ok());
  c.clock.advance(3);
  CHECK(run_sync(c.provider->describe(*h))->state == InstanceState::gone);
  CHECK(run_sync(c.provider->terminate(*h)).ok());  // 404: deleted already
  CHECK(c.fake.servers().empty());
}

TEST_CASE("offers: the location's net hourly price from every page of /server_types, exactly") {
  Cloud c({.page_size = 4});  // 9 types: three pages
  auto all = run_sync(c.provider->offers({}));
  REQUIRE_MESSAGE(all.ok(), all.error().detail);
  CHECK(c.fake.server().requests("server_types.list") == 3);
  CHECK(all->size() == 8);  // cx11 is deprecated
  auto cx32 = std::find_if(all->begin(), all->end(), [](const Offer& o) { return o.instance_type == "cx32"; });
  REQUIRE(cx32 != all->end());
  CHECK(cx32->hourly_price == 0.0109);
  CHECK(cx32->currency == "EUR");
  CHECK(cx32->vcpus == 4);
  CHECK(cx32->memory_gib == 8);
  CHECK(cx32->region == "fsn1");
  CHECK(cx32->note.find("capped at 6.80 a month") != std::string::npos);

  Cloud us({}, "ash");
  auto ash = run_sync(us.provider->offers({}));
  REQUIRE(ash.ok());
  REQUIRE(ash->size() == 4);
  CHECK((*ash)[0].instance_type == "cpx11");
  CHECK((*ash)[0].hourly_price == 0.008);
}

TEST_CASE("create refuses what it cannot launch, naming why; make() checks its options") {
  Cloud c;
  auto unknown = run_sync(c.provider->create(offer("cx999"), launch_spec("1")));
  CHECK(unknown.code() == Code::invalid_argument);
  CHECK(unknown.error().detail.find("invalid_input") != std::string::npos);
  CHECK(run_sync(c.provider->create(offer(), launch_spec("1", "bad tag!"))).error().detail.find("label") != std::string::npos);
  auto no_token = launch_spec("1");
  no_token.idempotency_token.clear();
  CHECK(run_sync(c.provider->create(offer(), no_token)).code() == Code::invalid_argument);
  CHECK(c.fake.servers().empty());

  CHECK(HetznerProvider::make({.token = "t"}).ok());
  CHECK(HetznerProvider::make({}).error().detail.find("token") != std::string::npos);
  CHECK(HetznerProvider::make({.token = "t", .endpoint = "ftp://x"}).code() == Code::invalid_argument);
  CHECK(HetznerProvider::make({.token = "t", .label_key = "-bad"}).code() == Code::invalid_argument);
}

TEST_CASE("the fake refuses what Hetzner refuses, and its label selectors and pages work as documented") {
  FakeClock clock;
  FakeHetznerCloud fake({.server = {.clock = &clock}, .token = kToken, .servers = {.page_size = 2}});
  REQUIRE(fake.start().ok());
  http::HttpClient client{{.retry = {.max_attempts = 1}}};
  auto call = [&](const std::string& method, const std::string& path, const std::string& body = "") {
    http::HttpRequest req{.method = method, .url = fake.api_url() + path,
                          .headers = {{"Authorization", "Bearer " + kToken}}, .body = body};
    auto r = run_sync(client.send(req));
    REQUIRE(r.ok());
    auto j = nlohmann::json::parse(r->body);
    return std::make_pair(r->status, j.contains("error") ? j["error"]["code"].get<std::string>() : std::string());
  };
  auto body = [](const std::string& name, nlohmann::json labels) {
    return nlohmann::json{{"name", name}, {"server_type", "cx22"}, {"image", "debian-12"}, {"location", "nbg1"},
                          {"labels", labels}}.dump();
  };
  CHECK(call("POST", "/servers", body("a", {{"tsum", "x"}, {"role", "db"}})).first == 201);
  CHECK(call("POST", "/servers", body("b", {{"tsum", "y"}})).first == 201);
  CHECK(call("POST", "/servers", body("c", nlohmann::json::object())).first == 201);
  CHECK(call("POST", "/servers", body("a", nlohmann::json::object())) == std::make_pair(409, std::string("uniqueness_error")));
  CHECK(call("POST", "/servers", body("Bad_Name", nlohmann::json::object())).second == "invalid_input");
  CHECK(call("POST", "/servers", body("d", {{"tsum", "not ok"}})).second == "invalid_input");
  CHECK(call("POST", "/servers", body("d", "labels")).second == "invalid_input");
  auto extra = nlohmann::json::parse(body("d", nlohmann::json::object()));
  extra["colour"] = "red";
  CHECK(call("POST", "/servers", extra.dump()).second == "invalid_input");
  extra.erase("colour");
  extra["location"] = "ash";
  CHECK(call("POST", "/servers", extra.dump()) == std::make_pair(412, std::string("resource_unavailable")));  // cx22 is EU-only
  CHECK(call("GET", "/servers?per_page=51").second == "invalid_input");
  CHECK(call("GET", "/servers?label_selector=" + http::uri_encode("bad key==x")).second == "invalid_input");
  CHECK(call("GET", "/servers/4711999").second == "not_found");
  CHECK(call("PUT", "/servers/4711001").second == "not_found");

  auto names = [&](const std::string& selector) {
    http::HttpRequest req{.method = "GET", .url = fake.api_url() + "/servers?per_page=50&label_selector=" + http::uri_encode(selector),
                          .headers = {{"Authorization", "Bearer " + kToken}}};
    auto r = run_sync(client.send(req));
    REQUIRE(r.ok());
    const auto doc = nlohmann::json::parse(r->body);
    std::string out;
    for (const auto& s : doc["servers"]) out += s["name"].get<std::string>();
    return out;
  };
  CHECK(names("tsum==x") == "a");
  CHECK(names("tsum=y") == "b");
  CHECK(names("tsum!=x") == "bc");
  CHECK(names("tsum") == "ab");
  CHECK(names("!tsum") == "c");
  CHECK(names("tsum,role==db") == "a");
  http::HttpRequest page2{.method = "GET", .url = fake.api_url() + "/servers?page=2&per_page=50",
                          .headers = {{"Authorization", "Bearer " + kToken}}};
  auto meta = nlohmann::json::parse(run_sync(client.send(page2))->body)["meta"]["pagination"];
  CHECK(meta["per_page"] == 2);  // the fake's page size caps per_page
  CHECK(meta["previous_page"] == 1);
  CHECK(meta["next_page"].is_null());
  CHECK(meta["last_page"] == 2);
  CHECK(meta["total_entries"] == 3);

  http::HttpRequest anonymous{.method = "GET", .url = fake.api_url() + "/servers"};
  CHECK(run_sync(client.send(anonymous))->status == 401);
  CHECK(fake.server().rejected() == 1);
}

TEST_CASE("describe_many lists tsum's servers once (every page) for all the handles; an unlisted one is asked alone") {
  Cloud c({.page_size = 2});
  std::vector<InstanceHandle> hs;
  for (int i = 0; i < 3; ++i) {
    auto h = run_sync(c.provider->create(offer(), launch_spec(std::to_string(30 + i))));
    REQUIRE(h.ok());
    hs.push_back(*h);
  }
  auto other = run_sync(c.provider->create(offer(), launch_spec("40", "another-daemon")));  // labelled tsum-run too
  REQUIRE(other.ok());
  c.clock.advance(3);
  REQUIRE(run_sync(c.provider->terminate(hs[1])).ok());
  c.clock.advance(5);  // hs[1] is gone
  std::vector<InstanceHandle> asked = {hs[0], hs[1], *other, hs[2]};

  const int lists = c.fake.server().requests("servers.list"), gets = c.fake.server().requests("servers.get");
  auto all = run_sync(c.provider->describe_many(asked));
  CHECK(c.fake.server().requests("servers.list") - lists == 2);  // three servers, pages of two
  CHECK(c.fake.server().requests("servers.get") - gets == 1);    // only the one the listing lacks
  REQUIRE(all.size() == asked.size());  // each as describe would: the conformance suite
  CHECK(all[0]->state == InstanceState::running);
  CHECK_FALSE(all[0]->address.empty());
  CHECK(all[1]->state == InstanceState::gone);
  CHECK(all[2]->state == InstanceState::running);

  c.fake.server().inject({.method = "servers.list", .kind = fake_cloud::FaultKind::internal_500, .count = 4});
  auto failed = run_sync(c.provider->describe_many({hs[0], hs[2]}));
  REQUIRE(failed.size() == 2);
  CHECK_FALSE(failed[0].ok());
  CHECK_FALSE(failed[1].ok());
}
