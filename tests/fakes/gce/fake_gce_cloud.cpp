#include "tests/fakes/gce/fake_gce_cloud.h"

#include "tests/fakes/cloud/request.h"
#include "providers/gce/gce_catalog.h"
#include "providers/gce/jwt.h"
#include "providers/http/codec.h"

namespace tsum::providers::gce::fake {

namespace {

using fake_cloud::Route;

constexpr double kMaxSkewS = 300;
constexpr double kMaxJwtLifetimeS = 3600;

http::LoopbackReply reply_of(const JsonAnswer& a) {
  return {.status = a.status, .headers = {{"Content-Type", "application/json; charset=UTF-8"}}, .body = a.body.dump()};
}

http::LoopbackReply oauth_error(const std::string& error, const std::string& description) {
  return reply_of({400, {{"error", error}, {"error_description", description}}});
}

// The claims checks Google's token endpoint makes; empty when they pass.
std::string claims_refusal(const nlohmann::json& claims, const std::string& email, const std::string& audience, double now) {
  if (claims.value("iss", "") != email) return "Invalid JWT: iss is not the service account";
  if (claims.value("aud", "") != audience) return "Invalid JWT: aud is not " + audience;
  if (claims.value("scope", "").empty()) return "Invalid JWT: no scope";
  if (!claims.value("iat", nlohmann::json()).is_number() || !claims.value("exp", nlohmann::json()).is_number())
    return "Invalid JWT: iat and exp must be numbers";
  double iat = claims["iat"].get<double>(), exp = claims["exp"].get<double>();
  if (iat > now + kMaxSkewS || exp <= now || exp - iat > kMaxJwtLifetimeS)
    return "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.";
  return {};
}

}  // namespace

FakeGceCloud::FakeGceCloud(FakeGceCloudOptions opts)
    : opts_(std::move(opts)), compute_(opts_.compute, fake_cloud::clock_or_system(opts_.server.clock)), server_(opts_.server, *this) {}

Result<std::uint16_t> FakeGceCloud::start() {
  if (opts_.public_key_pem.empty()) return make_error(Code::invalid_argument, "fake gce: no service account public key");
  return server_.start();
}

Status FakeGceCloud::guest_shutdown(const std::string& zone, const std::string& name) {
  Status s = compute_.guest_shutdown(zone, name);
  server_.sync_guests();
  return s;
}

http::LoopbackReply FakeGceCloud::metadata(const http::LoopbackRequest& req, const std::string& id) {
  const std::string path = req.target.substr(0, req.target.find('?'));
  const std::string flavor(http::find_header(req.headers, "Metadata-Flavor").value_or(""));
  auto [status, body] = compute_.metadata(path, flavor, id);
  return {.status = status, .headers = {{"Content-Type", "application/text"}, {"Metadata-Flavor", "Google"}},
          .body = std::move(body)};
}

std::vector<fake_guest::LiveInstance> FakeGceCloud::live_guests() const {
  std::vector<fake_guest::LiveInstance> up;
  for (auto& i : compute_.instances())
    if (i.status == "PROVISIONING" || i.status == "STAGING" || i.status == "RUNNING")
      up.push_back({i.id, i.metadata["user-data"]});
  return up;
}

http::LoopbackReply FakeGceCloud::fault_answer(int status, const std::string&) const {
  if (status == 429) return reply_of(google_error(429, "rateLimitExceeded", "Rate Limit Exceeded"));
  if (status == 503) return reply_of(google_error(503, "backendError", "The service is currently unavailable."));
  return reply_of(google_error(500, "backendError", "Internal error. Please try again."));
}

Route FakeGceCloud::token(const http::LoopbackRequest& req) {
  auto form = http::parse_query(req.body, /*plus_is_space=*/true);
  if (req.method != "POST" || !form) return Route::reply(oauth_error("invalid_request", "POST a form to the token endpoint"));
  fake_cloud::Query fields(form->begin(), form->end());
  auto refuse = [&](const std::string& error, const std::string& why) {
    return Route::refuse(oauth_error(error, why + " (assertion '" + fields["assertion"] + "')"));
  };
  if (fields["grant_type"] == "refresh_token") {
    const auto& u = opts_.user;
    if (fields["client_id"] != u.client_id || fields["client_secret"] != u.client_secret)
      return Route::refuse(oauth_error("invalid_client", "The OAuth client was not found."));
    if (fields["refresh_token"] != u.refresh_token)
      return Route::refuse(oauth_error("invalid_grant", "Token has been expired or revoked."));
    return Route::to("token", [this] { return issue_token(); });
  }
  if (fields["grant_type"] != "urn:ietf:params:oauth:grant-type:jwt-bearer")
    return refuse("unsupported_grant_type", "Invalid grant_type: " + fields["grant_type"]);
  auto jwt = verify_jwt(fields["assertion"], opts_.public_key_pem);
  if (!jwt) return refuse("invalid_grant", "Invalid JWT Signature: " + jwt.error().detail);
  if (auto why = claims_refusal(jwt->claims, opts_.client_email, token_url(), server_.clock().now_s()); !why.empty())
    return refuse("invalid_grant", why);
  return Route::to("token", [this] { return issue_token(); });
}

http::LoopbackReply FakeGceCloud::issue_token() {
  const std::string token = server_.book().issue("ya29.fake-", server_.clock().now_s() + opts_.token_lifetime_s);
  return reply_of({200, {{"access_token", token}, {"expires_in", static_cast<long>(opts_.token_lifetime_s)},
                         {"token_type", "Bearer"}}});
}

Route FakeGceCloud::host_metadata(const http::LoopbackRequest& req, const std::string& path) {
  auto flavor = http::find_header(req.headers, "Metadata-Flavor");
  if (!flavor || *flavor != "Google")
    return Route::reply({.status = 403, .body = "Missing required header: Metadata-Flavor: Google"});
  http::LoopbackReply r{.headers = {{"Metadata-Flavor", "Google"}, {"Content-Type", "application/text"}}};
  if (path == "/") return Route::reply(r);
  if (path == "/computeMetadata/v1/project/project-id") {
    r.body = opts_.compute.project;
    return Route::reply(r);
  }
  if (path == "/computeMetadata/v1/instance/service-accounts/default/token")
    return Route::to("token", [this] {
      auto t = issue_token();
      t.headers.emplace_back("Metadata-Flavor", "Google");
      return t;
    });
  return Route::reply({.status = 404, .headers = r.headers, .body = "not found"});
}

Route FakeGceCloud::route(const http::LoopbackRequest& req) {
  auto target = fake_cloud::parse_target(req);
  if (!target) return Route::reply(reply_of(google_error(400, "badRequest", "malformed query: " + target.error().detail)));
  const std::string& path = target->path;
  if (path == "/token") return token(req);
  if (path == "/" || path.starts_with("/computeMetadata/")) return host_metadata(req, path);
  auto bearer = fake_cloud::CallBook::bearer(req);
  if (!bearer || !server_.book().valid(*bearer, server_.clock().now_s())) {
    auto r = reply_of(google_error(401, "authError",
                                   bearer ? "Request had invalid authentication credentials (got '" + *bearer +
                                                "'). Expected OAuth 2 access token."
                                          : "Request is missing required authentication credential. Expected OAuth 2 access token."));
    r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"https://accounts.google.com/\", error=\"invalid_token\"");
    return Route::refuse(std::move(r));
  }
  if (path.starts_with("/compute/v1/")) {
    ComputeCall call{req.method, fake_cloud::split_path(std::string_view(path).substr(12)), target->query, req.body};
    std::string method = compute_method(call);
    if (!method.empty()) return Route::to(method, [this, call = std::move(call)] { return reply_of(compute_.handle(call)); });
  } else if (path == "/v1/services/" + std::string(kComputeServiceId) + "/skus" && req.method == "GET") {
    return Route::to("skus.list", [this, query = target->query] { return reply_of(list_skus(query, opts_.compute.page_size)); });
  }
  return Route::reply(reply_of(google_error(404, "notFound", "No such method: " + req.method + " " + path)));
}

}  // namespace tsum::providers::gce::fake
