#include "tests/fakes/yandex/fake_yandex_cloud.h"

#include <algorithm>

#include "common/json_util.h"
#include "tests/fakes/cloud/request.h"
#include "tests/fakes/yandex/fake_yandex_billing.h"
#include "providers/yandex/ps256_jwt.h"

namespace tsum::providers::yandex::fake {

namespace {

using fake_cloud::Route;

constexpr double kMaxSkewS = 300;
constexpr double kMaxJwtLifetimeS = 3600;

http::LoopbackReply reply_of(const YcAnswer& a) {
  return {.status = a.status, .headers = {{"Content-Type", "application/json"}}, .body = a.body.dump()};
}

// The checks Yandex's IAM makes on a JWT's header and claims; empty when they pass.
std::string jwt_refusal(const VerifiedJwt& jwt, const FakeYandexCloudOptions& o, const std::string& audience, double now) {
  if (jwt.header.value("kid", "") != o.key_id) return "JWT kid is not a key of this service account";
  if (jwt.claims.value("iss", "") != o.service_account_id) return "JWT iss is not the key's service account";
  const auto& aud = jwt.claims.value("aud", nlohmann::json());
  const bool aud_ok = (aud.is_string() && aud == audience) ||
                      (aud.is_array() && std::find(aud.begin(), aud.end(), nlohmann::json(audience)) != aud.end());
  if (!aud_ok) return "JWT aud is not " + audience;
  if (!jwt.claims.value("iat", nlohmann::json()).is_number() || !jwt.claims.value("exp", nlohmann::json()).is_number())
    return "JWT iat and exp must be numbers";
  const double iat = jwt.claims["iat"].get<double>(), exp = jwt.claims["exp"].get<double>();
  if (iat > now + kMaxSkewS || exp <= now || exp - iat > kMaxJwtLifetimeS) return "JWT expired or too long-lived (at most an hour)";
  return {};
}

}  // namespace

FakeYandexCloud::FakeYandexCloud(FakeYandexCloudOptions opts)
    : opts_(std::move(opts)), compute_(opts_.compute, fake_cloud::clock_or_system(opts_.server.clock)), server_(opts_.server, *this) {}

Result<std::uint16_t> FakeYandexCloud::start() {
  if (opts_.public_key_pem.empty()) return make_error(Code::invalid_argument, "fake yandex: no authorized key public key");
  return server_.start();
}

Status FakeYandexCloud::guest_shutdown(const std::string& id) {
  Status s = compute_.guest_shutdown(id);
  server_.sync_guests();
  return s;
}

std::vector<fake_guest::LiveInstance> FakeYandexCloud::live_guests() const {
  std::vector<fake_guest::LiveInstance> up;
  for (auto& i : compute_.instances())
    if (i.status == "PROVISIONING" || i.status == "STARTING" || i.status == "RUNNING")
      up.push_back({i.id, std::move(i.user_data)});
  return up;
}

http::LoopbackReply FakeYandexCloud::fault_answer(int status, const std::string&) const {
  if (status == 429) return reply_of(yc_error(429, "Too many requests"));
  if (status == 503) return reply_of(yc_error(503, "Service is unavailable, try again later"));
  return reply_of(yc_error(500, "Internal error"));
}

Route FakeYandexCloud::token(const http::LoopbackRequest& req) {
  auto doc = parse_json_safely(req.body);
  auto issue = [this] {
    const double expires = server_.clock().now_s() + opts_.token_lifetime_s;
    const std::string token = server_.book().issue("t1.fake-", expires);
    return reply_of({200, {{"iamToken", token}, {"expiresAt", fake_cloud::rfc3339(expires)}}});
  };
  if (req.method == "POST" && doc && doc->is_object() && (*doc)["yandexPassportOauthToken"].is_string()) {
    if ((*doc)["yandexPassportOauthToken"] != opts_.oauth_token)
      return Route::refuse(reply_of(yc_error(401, "The OAuth token is invalid or expired")));
    return Route::to("iam.token", issue);
  }
  if (req.method != "POST" || !doc || !doc->is_object() || !(*doc)["jwt"].is_string())
    return Route::reply(reply_of(yc_error(400, "POST {\"jwt\": ...} to the token endpoint")));
  const std::string jwt = (*doc)["jwt"].get<std::string>();
  auto refuse = [&](const std::string& why) { return Route::refuse(reply_of(yc_error(401, why + " (jwt '" + jwt + "')"))); };
  auto verified = verify_ps256_jwt(jwt, opts_.public_key_pem);
  if (!verified) return refuse("Invalid JWT: " + verified.error().detail);
  if (auto why = jwt_refusal(*verified, opts_, iam_url(), server_.clock().now_s()); !why.empty()) return refuse(why);
  return Route::to("iam.token", issue);
}

Route FakeYandexCloud::route(const http::LoopbackRequest& req) {
  auto target = fake_cloud::parse_target(req);
  if (!target) return Route::reply(reply_of(yc_error(400, "malformed query: " + target.error().detail)));
  const std::string& path = target->path;
  if (path == "/iam/v1/tokens") return token(req);
  if (path == "/computeMetadata/v1/instance/service-accounts/default/token") {  // the VM's metadata server
    if (http::find_header(req.headers, "Metadata-Flavor").value_or("") != "Google")
      return Route::reply({.status = 403, .headers = {}, .body = "Missing required header: Metadata-Flavor"});
    if (!opts_.instance_service_account)
      return Route::reply({.status = 404, .headers = {}, .body = "No service account is linked to this instance"});
    return Route::to("metadata.token", [this] {
      const std::string token = server_.book().issue("t1.fake-vm-", server_.clock().now_s() + 3600);
      return reply_of({200, {{"access_token", token}, {"expires_in", 3600}, {"token_type", "Bearer"}}});
    });
  }
  auto bearer = fake_cloud::CallBook::bearer(req);
  if (!bearer) return Route::refuse(reply_of(yc_error(401, "The token is missing")));
  if (!server_.book().valid(*bearer, server_.clock().now_s()))
    return Route::refuse(reply_of(yc_error(401, "The token is invalid or expired: '" + *bearer + "'")));
  const auto segments = fake_cloud::split_path(path);
  if (path == "/compute/v1/images:latestByFamily" && req.method == "GET") {
    fake_cloud::Query q(target->query.begin(), target->query.end());
    auto it = opts_.image_families.find(q["family"]);
    if (q["folderId"] != "standard-images" || it == opts_.image_families.end())
      return Route::reply(reply_of(yc_error(404, "Image family " + q["family"] + " not found in folder " + q["folderId"])));
    return Route::to("images.getLatestByFamily", [id = it->second, family = it->first] {
      return reply_of({200, {{"id", id}, {"folderId", "standard-images"}, {"family", family}, {"status", "READY"}}});
    });
  }
  if (path == "/vpc/v1/subnets" && req.method == "GET") {
    fake_cloud::Query q(target->query.begin(), target->query.end());
    if (q["folderId"] != opts_.compute.folder_id)
      return Route::reply(reply_of(yc_error(403, "Permission denied to folder " + q["folderId"])));
    return Route::to("subnets.list", [this, folder = q["folderId"]] {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& [zone, id] : opts_.subnets) list.push_back({{"id", id}, {"folderId", folder}, {"zoneId", zone}});
      return reply_of({200, {{"subnets", list}}});
    });
  }
  if (path.starts_with("/compute/v1/")) {
    ComputeCall call{req.method, fake_cloud::split_path(std::string_view(path).substr(12)), target->query, req.body};
    std::string method = compute_method(call);
    if (!method.empty())
      return Route::to(method, [this, method, call = std::move(call)] { return reply_of(compute_.handle(method, call)); });
  } else if (segments.size() == 2 && segments[0] == "operations" && req.method == "GET") {
    return Route::to("operations.get", [this, id = segments[1]] { return reply_of(compute_.operation(id)); });
  } else if (path == "/billing/v1/skus" && req.method == "GET") {
    return Route::to("skus.list", [this, query = target->query] { return reply_of(list_skus(query, opts_.sku_page_size)); });
  }
  return Route::reply(reply_of(yc_error(404, "No such method: " + req.method + " " + path)));
}

}  // namespace tsum::providers::yandex::fake
