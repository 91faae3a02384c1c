// The Hetzner Cloud provider against the fake Hetzner, in-process, over HTTPS with a CA made at test time.
// The fake checks the bearer token on every call; a FakeClock shared by both drives the server lifecycle.
// Also the exact decimal parsing of prices.
#include <doctest/doctest.h>

#include <algorithm>

#include "providers/aws/codec.h"
#include "providers/hetzner/fake/fake_hetzner_cloud.h"
#include "providers/hetzner/hetzner_provider.h"
#include "providers/http/http_client.h"
#include "support/guest_net.h"
#include "support/guest_probe.h"
#include "support/run_sync.h"
#include "support/test_tls.h"

using namespace tsum;
using namespace tsum::providers;
using namespace tsum::providers::hetzner;
using namespace tsum::providers::hetzner::fake;
using namespace std::chrono_literals;
using tsum::testing::run_sync;

namespace {

const std::string kToken = "hcloud-test-token-0123456789";

struct Cloud {
  testing::TestTls tls;
  FakeClock clock;
  FakeHetznerCloud fake;
  std::unique_ptr<HetznerProvider> provider;

  explicit Cloud(FakeServersOptions servers = {}, std::string location = "fsn1",
                 fake_guest::FakeGuestOptions guest = {})
      : fake({.listen = {.cert_file = tls.cert_file(), .key_file = tls.key_file()}, .token = kToken,
              .servers = servers, .hang = 3s, .guest = guest, .clock = &clock}) {
    REQUIRE(fake.start().ok());
    provider = make(kToken, location);
  }

  std::unique_ptr<HetznerProvider> make(const std::string& token, std::string location = "fsn1") {
    HetznerOptions o{.token = token, .endpoint = fake.api_url(), .location = location,
                     .http = {.ca_file = tls.ca_file(),
                              .retry = {.max_attempts = 4, .base_delay = 10ms, .max_delay = 50ms, .deadline = 30s}},
                     .attempt_timeout = 1500ms, .clock = &clock};
    auto p = HetznerProvider::make(o);
    REQUIRE_MESSAGE(p.ok(), p.error().detail);
    return std::move(*p);
  }
};

LaunchSpec spec(const std::string& run, const std::string& tag = "tsum-test") {
  return {.run_id = run, .tag = tag, .idempotency_token = "run" + run + "-" + tag,
          .agent_script = "#!/bin/sh\necho agent for run " + run + "\n",
          .env = {{"TSUM_RUN_ID", run}, {"TSUM_TOKEN", "it's secret"}}};
}

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
  auto h = run_sync(c.provider->create(offer(), spec("7")));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  CHECK(h->provider == "hetzner");
  auto all = c.fake.servers();
  REQUIRE(all.size() == 1);
  const FakeServer& s = all[0];
  CHECK(h->id == std::to_string(s.id));
  CHECK(s.name == HetznerProvider::server_name(spec("7")));
  CHECK(s.server_type == "cx22");
  CHECK(s.image == "ubuntu-22.04");
  CHECK(s.location == "fsn1");
  CHECK(s.labels.at("tsum") == "tsum-test");
  CHECK(s.labels.at("tsum-run") == "7");
  CHECK(s.user_data.starts_with("#cloud-config\n"));
  CHECK(s.user_data.find(aws::base64_encode(aws::gzip_compress(spec("7").agent_script))) != std::string::npos);
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

TEST_CASE("a create whose answer was lost is retried: uniqueness_error, then the server of that name is adopted") {
  Cloud c;
  c.fake.inject({.action = "servers.create", .kind = FaultKind::lost});
  auto h = run_sync(c.provider->create(offer(), spec("1")));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  CHECK(c.fake.requests("servers.create") == 2);
  CHECK(c.fake.requests("servers.list") == 1);
  CHECK(c.fake.created() == 1);
  REQUIRE(c.fake.servers().size() == 1);
  CHECK(h->id == std::to_string(c.fake.servers()[0].id));
}

TEST_CASE("create again (a daemon retry) gives the same server; a name with another run's labels clashes") {
  Cloud c;
  auto first = run_sync(c.provider->create(offer(), spec("2")));
  REQUIRE(first.ok());
  auto again = run_sync(c.provider->create(offer(), spec("2")));
  REQUIRE(again.ok());
  CHECK(again->id == first->id);
  CHECK(c.fake.created() == 1);
  auto stranger = spec("2", "other-tag");
  stranger.idempotency_token = spec("2").idempotency_token;
  auto clash = run_sync(c.provider->create(offer(), stranger));
  CHECK(clash.code() == Code::already_exists);
  CHECK(clash.error().detail.find("another run") != std::string::npos);
  REQUIRE(run_sync(c.provider->terminate(*first)).ok());
  auto dying = run_sync(c.provider->create(offer(), spec("2")));  // not a handle to a server on its way out
  CHECK(dying.code() == Code::unavailable);
  CHECK(dying.error().detail.find("being deleted") != std::string::npos);
  c.clock.advance(3);
  auto fresh = run_sync(c.provider->create(offer(), spec("2")));
  REQUIRE(fresh.ok());
  CHECK(fresh->id != first->id);
}

TEST_CASE("terminate deletes: deleting reads exited, then gone; a powered-off server is still there until deleted") {
  Cloud c;
  auto h = run_sync(c.provider->create(offer(), spec("3")));
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

TEST_CASE("a delete that fails three times (503, 500, 429) then succeeds") {
  Cloud c;
  auto h = run_sync(c.provider->create(offer(), spec("4")));
  REQUIRE(h.ok());
  c.fake.inject({.action = "servers.delete", .kind = FaultKind::unavailable_503});
  c.fake.inject({.action = "servers.delete", .kind = FaultKind::internal_500});
  c.fake.inject({.action = "servers.delete", .kind = FaultKind::throttle_429});
  REQUIRE(run_sync(c.provider->terminate(*h)).ok());
  CHECK(c.fake.requests("servers.delete") == 4);
  CHECK(c.fake.servers().at(0).status == "deleting");
}

TEST_CASE("leak guard: a create whose answers are all lost leaves a server the label sweep finds and deletes") {
  Cloud c;
  c.fake.inject({.action = "servers.create", .kind = FaultKind::lost, .count = 4});
  auto h = run_sync(c.provider->create(offer(), spec("5")));
  REQUIRE_FALSE(h.ok());
  CHECK(h.code() == Code::unavailable);
  CHECK(c.fake.created() == 1);  // the retries met the taken name
  auto strays = run_sync(c.provider->list_tagged("tsum-test"));
  REQUIRE(strays.ok());
  REQUIRE(strays->size() == 1);
  CHECK((*strays)[0].data.value("name", "") == HetznerProvider::server_name(spec("5")));
  REQUIRE(run_sync(c.provider->terminate((*strays)[0])).ok());
  c.clock.advance(3);
  CHECK(run_sync(c.provider->list_tagged("tsum-test"))->empty());
}

TEST_CASE("list_tagged follows meta.pagination through every page and leaves out other labels") {
  Cloud c({.page_size = 2});
  for (int i = 0; i < 5; ++i) REQUIRE(run_sync(c.provider->create(offer(), spec(std::to_string(10 + i)))).ok());
  REQUIRE(run_sync(c.provider->create(offer(), spec("20", "someone-else"))).ok());
  auto found = run_sync(c.provider->list_tagged("tsum-test"));
  REQUIRE(found.ok());
  CHECK(found->size() == 5);
  for (const auto& h : *found) CHECK(h.data.value("server_type", "") == "cx22");
  CHECK(c.fake.requests("servers.list") == 3);
  CHECK(run_sync(c.provider->list_tagged("nobody"))->empty());
  CHECK(run_sync(c.provider->list_tagged("a,b")).code() == Code::invalid_argument);
}

TEST_CASE("describe_many lists tsum's servers once (every page) for all the handles; an unlisted one is asked alone") {
  Cloud c({.page_size = 2});
  std::vector<InstanceHandle> hs;
  for (int i = 0; i < 3; ++i) {
    auto h = run_sync(c.provider->create(offer(), spec(std::to_string(30 + i))));
    REQUIRE(h.ok());
    hs.push_back(*h);
  }
  auto other = run_sync(c.provider->create(offer(), spec("40", "another-daemon")));  // labelled tsum-run too
  REQUIRE(other.ok());
  c.clock.advance(3);
  REQUIRE(run_sync(c.provider->terminate(hs[1])).ok());
  c.clock.advance(5);  // hs[1] is gone
  std::vector<InstanceHandle> asked = {hs[0], hs[1], *other, hs[2]};

  const int lists = c.fake.requests("servers.list"), gets = c.fake.requests("servers.get");
  auto all = run_sync(c.provider->describe_many(asked));
  CHECK(c.fake.requests("servers.list") - lists == 2);  // three servers, pages of two
  CHECK(c.fake.requests("servers.get") - gets == 1);    // only the one the listing lacks
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
  CHECK_FALSE(all[0]->address.empty());
  CHECK(all[1]->state == InstanceState::gone);
  CHECK(all[2]->state == InstanceState::running);
  CHECK(run_sync(c.provider->describe_many({})).empty());

  c.fake.inject({.action = "servers.list", .kind = FaultKind::internal_500, .count = 4});
  auto failed = run_sync(c.provider->describe_many({hs[0], hs[2]}));
  REQUIRE(failed.size() == 2);
  CHECK_FALSE(failed[0].ok());
  CHECK_FALSE(failed[1].ok());
}

TEST_CASE("429 with Retry-After, 500 and a timeout are retried; throttling that outlasts the retries is unavailable") {
  Cloud c;
  auto h = run_sync(c.provider->create(offer(), spec("6")));
  REQUIRE(h.ok());
  c.fake.inject({.action = "servers.get", .kind = FaultKind::throttle_429});
  c.fake.inject({.action = "servers.get", .kind = FaultKind::internal_500});
  c.fake.inject({.action = "servers.get", .kind = FaultKind::timeout});
  auto st = run_sync(c.provider->describe(*h));
  REQUIRE_MESSAGE(st.ok(), st.error().detail);
  CHECK(c.fake.requests("servers.get") == 4);
  c.fake.inject({.action = "servers.get", .kind = FaultKind::unavailable_503, .count = 10});
  st = run_sync(c.provider->describe(*h));
  REQUIRE_FALSE(st.ok());
  CHECK(st.code() == Code::unavailable);
  CHECK(st.error().detail.find("HTTP 503") != std::string::npos);
}

TEST_CASE("a wrong token is refused, not retried, and never appears in the message") {
  Cloud c;
  const std::string wrong = "hcloud-wrong-token-abcdef";
  auto bad = c.make(wrong);
  auto r = run_sync(bad->list_tagged("tsum-test"));
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == Code::invalid_argument);
  CHECK(r.error().detail.find("unauthorized") != std::string::npos);
  CHECK(r.error().detail.find("[redacted]") != std::string::npos);  // the fake quoted it back
  CHECK(r.error().detail.find(wrong) == std::string::npos);
  CHECK(c.fake.rejected() == 1);
  CHECK(c.fake.requests("servers.list") == 0);
}

TEST_CASE("offers: the location's net hourly price from every page of /server_types, exactly; cached") {
  Cloud c({.page_size = 4});  // 9 types: three pages
  auto all = run_sync(c.provider->offers({}));
  REQUIRE_MESSAGE(all.ok(), all.error().detail);
  CHECK(c.fake.requests("server_types.list") == 3);
  CHECK(all->size() == 8);  // cx11 is deprecated
  CHECK(std::is_sorted(all->begin(), all->end(), [](const Offer& a, const Offer& b) { return a.hourly_price < b.hourly_price; }));
  auto cx32 = std::find_if(all->begin(), all->end(), [](const Offer& o) { return o.instance_type == "cx32"; });
  REQUIRE(cx32 != all->end());
  CHECK(cx32->hourly_price == 0.0109);
  CHECK(cx32->currency == "EUR");
  CHECK(cx32->vcpus == 4);
  CHECK(cx32->memory_gib == 8);
  CHECK(cx32->region == "fsn1");
  CHECK(cx32->note.find("capped at 6.80 a month") != std::string::npos);
  CHECK(run_sync(c.provider->offers({.min_vcpus = 8}))->size() == 2);
  CHECK(run_sync(c.provider->offers({.gpus = 1}))->empty());
  CHECK(c.fake.requests("server_types.list") == 3);  // cached

  Cloud us({}, "ash");
  auto ash = run_sync(us.provider->offers({}));
  REQUIRE(ash.ok());
  REQUIRE(ash->size() == 4);
  CHECK((*ash)[0].instance_type == "cpx11");
  CHECK((*ash)[0].hourly_price == 0.008);
}

TEST_CASE("create refuses what it cannot launch, naming why; make() checks its options") {
  Cloud c;
  auto unknown = run_sync(c.provider->create(offer("cx999"), spec("1")));
  CHECK(unknown.code() == Code::invalid_argument);
  CHECK(unknown.error().detail.find("invalid_input") != std::string::npos);
  CHECK(run_sync(c.provider->create(offer(), spec("1", "bad tag!"))).error().detail.find("label") != std::string::npos);
  auto no_token = spec("1");
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
  FakeHetznerCloud fake({.token = kToken, .servers = {.page_size = 2}, .clock = &clock});
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
  CHECK(call("GET", "/servers?label_selector=" + aws::uri_encode("bad key==x")).second == "invalid_input");
  CHECK(call("GET", "/servers/4711999").second == "not_found");
  CHECK(call("PUT", "/servers/4711001").second == "not_found");

  auto names = [&](const std::string& selector) {
    http::HttpRequest req{.method = "GET", .url = fake.api_url() + "/servers?per_page=50&label_selector=" + aws::uri_encode(selector),
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
  CHECK(fake.rejected() == 1);
}

TEST_CASE("with a guest root the fake boots the instance's user data: the agent runs; terminate kills it") {
  testing::TestNetwork net;
  testing::TempDir root("tsum-guest");
  const std::string marker = root.path().string();
  const fake_guest::FakeGuestOptions guest{.root = marker, .image = testing::kGuestImage, .network = net.bridge()};
  const auto guests = net.guests();
  Cloud c({}, "fsn1", guest);
  auto h = run_sync(c.provider->create(offer(), testing::guest_spec("g1", "hetzner x")));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  const std::string home = marker + "/" + std::to_string(c.fake.servers().at(0).id) + "/root";  // its "/"
  CHECK(testing::wait_for_line(home + "/opt/tsum/work/x.out", 10s) == "hetzner x\n");
  CHECK(testing::count_within(guests, {"sleep", "1000"}, 2, 5s));  // one agent: its child and its own sleep
  REQUIRE(run_sync(c.provider->terminate(*h)).ok());
  CHECK(testing::gone_within(guests, 5s));
}
