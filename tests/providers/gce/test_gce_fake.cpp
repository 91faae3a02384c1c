// The fake GCE on its own, over plain HTTP with raw requests: what its token endpoint refuses (signature,
// issuer, audience, lifetime, grant type), bearer checks, and the Compute requests it refuses.
#include <doctest/doctest.h>

#include "tests/fakes/gce/fake_gce_cloud.h"
#include "providers/gce/gce_json.h"
#include "providers/http/codec.h"
#include "providers/http/http_client.h"
#include "support/gce_account.h"
#include "support/run_sync.h"

using namespace tsum;
using namespace tsum::providers;
using namespace tsum::providers::gce;
using namespace tsum::providers::gce::fake;
using tsum::testing::run_sync;
using tsum::testing::test_account;

namespace {

struct PlainFake {
  FakeClock clock;
  FakeGceCloud fake;
  http::HttpClient client{{.retry = {.max_attempts = 1}}};

  PlainFake()
      : fake({.server = {.clock = &clock}, .client_email = test_account().client_email,
              .public_key_pem = *rsa_public_key_pem(test_account().private_key_pem)}) {
    REQUIRE(fake.start().ok());
  }

  http::HttpResponse send(const std::string& method, const std::string& url, const std::string& body = "",
                          const http::HttpHeaders& headers = {}) {
    http::HttpRequest req{.method = method, .url = url, .headers = headers, .body = body};
    auto r = run_sync(client.send(req));
    REQUIRE(r.ok());
    return *r;
  }

  http::HttpResponse exchange(const std::string& assertion, const std::string& grant = "urn:ietf:params:oauth:grant-type:jwt-bearer") {
    return send("POST", fake.token_url(), http::form_encode({{"grant_type", grant}, {"assertion", assertion}}),
                {{"Content-Type", "application/x-www-form-urlencoded"}});
  }

  std::string assertion(const ServiceAccount& sa, double iat, long long lifetime = 3600, std::string aud = "") {
    auto a = make_assertion(sa, kCloudPlatformScope, aud.empty() ? fake.token_url() : aud, static_cast<long long>(iat), lifetime);
    REQUIRE(a.ok());
    return *a;
  }

  std::string token() {
    auto r = exchange(assertion(test_account(), clock.now_s()));
    REQUIRE(r.status == 200);
    return nlohmann::json::parse(r.body)["access_token"];
  }

  http::HttpResponse compute(const std::string& method, const std::string& path, const std::string& body, const std::string& token) {
    return send(method, fake.compute_url() + "/" + path, body, {{"Authorization", "Bearer " + token}});
  }
};

std::string oauth_error(const http::HttpResponse& r) { return nlohmann::json::parse(r.body).value("error", ""); }
std::string reason(const http::HttpResponse& r) { return nlohmann::json::parse(r.body)["error"]["errors"][0]["reason"]; }
std::string message(const http::HttpResponse& r) { return nlohmann::json::parse(r.body)["error"]["message"]; }

}  // namespace

TEST_CASE("the token endpoint takes only a current, hour-long assertion signed by the account, for itself") {
  PlainFake f;
  const double now = f.clock.now_s();
  auto good = f.exchange(f.assertion(test_account(), now));
  REQUIRE(good.status == 200);
  auto answer = nlohmann::json::parse(good.body);
  CHECK(answer["token_type"] == "Bearer");
  CHECK(answer["expires_in"] == 3600);
  CHECK(f.fake.server().tokens_issued() == 1);

  ServiceAccount impostor = test_account();
  impostor.private_key_pem = *generate_rsa_key_pem();
  CHECK(oauth_error(f.exchange(f.assertion(impostor, now))) == "invalid_grant");
  ServiceAccount other_email = test_account();
  other_email.client_email = "someone@else.iam.gserviceaccount.com";
  CHECK(nlohmann::json::parse(f.exchange(f.assertion(other_email, now)).body)["error_description"].get<std::string>().find("iss") !=
        std::string::npos);
  CHECK(oauth_error(f.exchange(f.assertion(test_account(), now, 3600, "https://oauth2.googleapis.com/token"))) == "invalid_grant");
  CHECK(oauth_error(f.exchange(f.assertion(test_account(), now - 7200))) == "invalid_grant");      // expired
  CHECK(oauth_error(f.exchange(f.assertion(test_account(), now + 600))) == "invalid_grant");       // from the future
  CHECK(oauth_error(f.exchange(f.assertion(test_account(), now, 7200))) == "invalid_grant");       // too long
  CHECK(f.exchange(f.assertion(test_account(), now - 100)).status == 200);                         // clock skew is fine
  CHECK(oauth_error(f.exchange(f.assertion(test_account(), now), "client_credentials")) == "unsupported_grant_type");
  CHECK(oauth_error(f.exchange("not.a.jwt")) == "invalid_grant");
  CHECK(f.fake.server().rejected() == 8);
  CHECK(f.fake.server().tokens_issued() == 2);
}

TEST_CASE("API calls need a token the endpoint issued and that has not expired") {
  PlainFake f;
  const std::string path = "projects/tsum-fake/zones/us-central1-a/machineTypes";
  CHECK(f.send("GET", f.fake.compute_url() + "/" + path).status == 401);
  CHECK(f.compute("GET", path, "", "ya29.made-up").status == 401);
  const std::string token = f.token();
  auto ok = f.compute("GET", path, "", token);
  CHECK(ok.status == 200);
  CHECK(f.fake.server().requests("machineTypes.list") == 1);
  f.clock.advance(3601);
  auto expired = f.compute("GET", path, "", token);
  CHECK(expired.status == 401);
  CHECK(reason(expired) == "authError");
  CHECK(f.fake.server().rejected() == 3);
}

TEST_CASE("Compute refuses unknown fields, bad names, requestIds, zones, scheduling and filters") {
  PlainFake f;
  const std::string token = f.token();
  InsertSpec s{.name = "tsum-1", .zone = "us-central1-a", .machine_type = "e2-standard-2", .source_image = "img",
               .labels = {{"tsum", "t"}}, .max_run_duration = std::chrono::hours(1)};
  const std::string insert = "projects/tsum-fake/zones/us-central1-a/instances";
  auto with = [&](auto edit) {
    auto b = insert_body(s);
    edit(b);
    return b.dump();
  };
  auto created = f.compute("POST", insert + "?requestId=" + uuid_for("a"), insert_body(s).dump(), token);
  REQUIRE(created.status == 200);
  const std::string op = nlohmann::json::parse(created.body)["name"];
  CHECK(nlohmann::json::parse(created.body)["status"] == "RUNNING");
  auto replayed = f.compute("POST", insert + "?requestId=" + uuid_for("a"), with([](auto& b) { b["name"] = "tsum-other"; }), token);
  CHECK(nlohmann::json::parse(replayed.body)["name"] == op);  // the first call's operation, nothing new
  CHECK(f.fake.created() == 1);
  CHECK(reason(f.compute("POST", insert, insert_body(s).dump(), token)) == "alreadyExists");
  CHECK(message(f.compute("POST", insert, with([](auto& b) { b["colour"] = "red"; }), token)).find("Unknown name") != std::string::npos);
  CHECK(f.compute("POST", insert + "?requestId=not-a-uuid", insert_body(s).dump(), token).status == 400);
  CHECK(f.compute("POST", insert, with([](auto& b) { b["name"] = "Bad_Name"; }), token).status == 400);
  CHECK(f.compute("POST", insert, with([](auto& b) { b["name"] = "tsum-2"; b["labels"]["Key"] = "v"; }), token).status == 400);
  CHECK(f.compute("POST", insert, with([](auto& b) { b["name"] = "tsum-2"; b["scheduling"].erase("instanceTerminationAction"); }), token).status == 400);
  CHECK(message(f.compute("POST", insert, with([](auto& b) {
          b["name"] = "tsum-2";
          b["machineType"] = "zones/us-central1-a/machineTypes/g2-standard-4";
        }), token)).find("live migration") != std::string::npos);
  CHECK(f.compute("POST", insert, with([](auto& b) { b["name"] = "tsum-2"; b["disks"] = nlohmann::json::array(); }), token).status == 400);
  CHECK(f.compute("POST", insert, with([](auto& b) { b["name"] = "tsum-2"; b["metadata"] = "x"; }), token).status == 400);
  CHECK(f.compute("POST", insert, "[1, 2]", token).status == 400);
  CHECK(f.compute("POST", "projects/tsum-fake/zones/mars-north1-a/instances", insert_body(s).dump(), token).status == 400);
  CHECK(f.compute("GET", "projects/someone-else/zones/us-central1-a/instances/tsum-1", "", token).status == 404);
  CHECK(f.compute("GET", "projects/tsum-fake/aggregated/instances?filter=" + http::uri_encode("name = x"), "", token).status == 400);
  CHECK(f.compute("GET", "projects/tsum-fake/aggregated/instances?pageToken=forged", "", token).status == 400);
  auto op_now = f.compute("GET", "projects/tsum-fake/zones/us-central1-a/operations/" + op, "", token);
  CHECK(nlohmann::json::parse(op_now.body)["status"] == "DONE");
  CHECK(f.compute("GET", "projects/tsum-fake/zones/us-central1-b/operations/" + op, "", token).status == 404);
  CHECK(f.fake.created() == 1);

  const std::string del = insert + "/tsum-1?requestId=" + uuid_for("d");
  auto first = nlohmann::json::parse(f.compute("DELETE", del, "", token).body);
  auto again = nlohmann::json::parse(f.compute("DELETE", del, "", token).body);
  CHECK(first["name"] == again["name"]);
  CHECK(first["operationType"] == "delete");
  f.clock.advance(3);
  CHECK(reason(f.compute("DELETE", insert + "/tsum-1", "", token)) == "notFound");
}
