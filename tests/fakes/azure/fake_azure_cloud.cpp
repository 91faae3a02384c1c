#include "tests/fakes/azure/fake_azure_cloud.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "providers/azure/azure_api.h"
#include "providers/azure/azure_login.h"
#include "providers/gce/jwt.h"
#include "tests/fakes/cloud/request.h"
#include "providers/http/codec.h"

namespace tsum::providers::azure::fake {

namespace {

using fake_cloud::Route;

http::LoopbackReply reply_of(const ArmAnswer& a) {
  http::LoopbackReply r{.status = a.status, .headers = {{"Content-Type", "application/json; charset=utf-8"}}, .body = a.body.dump()};
  r.headers.insert(r.headers.end(), a.headers.begin(), a.headers.end());
  return r;
}

http::LoopbackReply oauth_error(int status, const std::string& error, const std::string& description) {
  return reply_of({status, {{"error", error}, {"error_description", description}, {"error_codes", {7000215}}}, {}});
}

}  // namespace

FakeAzureCloud::FakeAzureCloud(FakeAzureCloudOptions opts)
    : opts_(std::move(opts)), arm_(opts_.arm, fake_cloud::clock_or_system(opts_.server.clock)), server_(opts_.server, *this) {}

Result<std::uint16_t> FakeAzureCloud::start() {
  if (opts_.client_secret.empty() && opts_.certificate_pem.empty() && opts_.federated_token.empty() &&
      opts_.refresh_token.empty() && !opts_.managed_identity)
    return make_error(Code::invalid_argument, "fake azure: no client secret, certificate, federated token, refresh token or managed identity");
  auto port = server_.start();
  if (port) arm_.set_base_url(server_.base_url());
  return port;
}

Status FakeAzureCloud::guest_shutdown(const std::string& group) {
  Status s = arm_.guest_shutdown(group);
  server_.sync_guests();
  return s;
}

http::LoopbackReply FakeAzureCloud::metadata(const http::LoopbackRequest& req, const std::string& id) {
  const std::string path = req.target.substr(0, req.target.find('?'));
  if (path != "/metadata/scheduledevents") return {.status = 404, .headers = {}, .body = R"({"error": "Not found"})"};
  const bool header = http::find_header(req.headers, "Metadata").value_or("") == "true";
  auto [status, body] = arm_.scheduled_events(id, header);
  return {.status = status, .headers = {{"Content-Type", "application/json; charset=utf-8"}}, .body = std::move(body)};
}

std::vector<fake_guest::LiveInstance> FakeAzureCloud::live_guests() const {
  std::vector<fake_guest::LiveInstance> up;
  for (auto& v : arm_.vms())
    if ((v.provisioning_state == "Creating" || v.provisioning_state == "Succeeded") && v.power_state != "stopped")
      up.push_back({v.group + "." + v.name, std::move(v.custom_data)});
  return up;
}

http::LoopbackReply FakeAzureCloud::fault_answer(int status, const std::string&) const {
  if (status == 429) return reply_of(arm_error(429, "TooManyRequests", "The request is being throttled as the limit has been reached."));
  if (status == 503) return reply_of(arm_error(503, "ServiceUnavailable", "The service is temporarily unavailable."));
  return reply_of(arm_error(500, "InternalServerError", "Encountered internal server error."));
}

Route FakeAzureCloud::issue() {
  return Route::to("token", [this] {
    const std::string token = server_.book().issue("eyJ0eXAiOiJKV1QifQ.fake-", server_.clock().now_s() + opts_.token_lifetime_s);
    const auto lifetime = static_cast<long>(opts_.token_lifetime_s);
    return reply_of({200, {{"token_type", "Bearer"}, {"expires_in", lifetime}, {"ext_expires_in", lifetime}, {"access_token", token}}, {}});
  });
}

std::string FakeAzureCloud::assertion_refused(const std::string& assertion, const std::string& audience) const {
  if (!opts_.federated_token.empty() && assertion == opts_.federated_token) return {};
  if (opts_.certificate_pem.empty()) return "AADSTS700027: Client assertion failed signature validation.";
  BIO* bio = BIO_new_mem_buf(opts_.certificate_pem.data(), static_cast<int>(opts_.certificate_pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (!cert) return "the fake's certificate is not PEM";
  unsigned char sha1[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  X509_digest(cert, EVP_sha1(), sha1, &n);
  EVP_PKEY* key = X509_get_pubkey(cert);
  BIO* mem = BIO_new(BIO_s_mem());
  PEM_write_bio_PUBKEY(mem, key);
  char* data = nullptr;
  const long len = BIO_get_mem_data(mem, &data);
  const std::string pub(data, len > 0 ? static_cast<std::size_t>(len) : 0);
  BIO_free(mem);
  EVP_PKEY_free(key);
  X509_free(cert);
  auto jwt = gce::verify_jwt(assertion, pub);
  if (!jwt) return "AADSTS700027: Client assertion failed signature validation. (" + jwt.error().detail + ")";
  const auto& h = jwt->header;
  const auto& c = jwt->claims;
  if (h.value("x5t", "") != gce::base64url_encode(std::string_view(reinterpret_cast<char*>(sha1), n)))
    return "AADSTS700027: The certificate with identifier used to sign the client assertion is not registered on application.";
  if (c.value("aud", "") != audience) return "AADSTS700024: Client assertion audience claim does not match Realm issuer.";
  if (c.value("iss", "") != opts_.client_id || c.value("sub", "") != opts_.client_id)
    return "AADSTS700021: Client assertion application identifier doesn't match 'client_id' parameter.";
  const double now = server_.clock().now_s();
  if (!c.contains("exp") || !c["exp"].is_number() || c["exp"].get<double>() < now)
    return "AADSTS700024: Client assertion is not within its valid time range.";
  if (c.value("jti", "").empty()) return "AADSTS700021: the client assertion has no jti.";
  return {};
}

Route FakeAzureCloud::token(const http::LoopbackRequest& req) {
  auto form = http::parse_query(req.body, /*plus_is_space=*/true);
  if (req.method != "POST" || !form)
    return Route::reply(oauth_error(400, "invalid_request", "AADSTS900144: POST a form to the token endpoint."));
  fake_cloud::Query fields(form->begin(), form->end());
  auto refuse = [](int status, const std::string& error, const std::string& why) {
    return Route::refuse(oauth_error(status, error, why));
  };
  const std::string& grant = fields["grant_type"];
  if (grant == "refresh_token") {
    if (opts_.refresh_token.empty() || fields["client_id"] != azure::kAzureCliClientId || fields["refresh_token"] != opts_.refresh_token)
      return refuse(400, "invalid_grant", "AADSTS70000: The provided value for the 'refresh_token' is not valid ('" +
                                              fields["refresh_token"] + "'). Run 'az login'.");
    if (fields["scope"].find(kManagementScope) == std::string::npos)
      return refuse(400, "invalid_scope", "AADSTS1002012: The provided value for scope " + fields["scope"] + " is not valid.");
    return issue();
  }
  if (grant != "client_credentials")
    return refuse(400, "unsupported_grant_type", "AADSTS70003: The app requested an unsupported grant type '" + grant + "'.");
  if (fields["client_id"] != opts_.client_id)
    return refuse(400, "unauthorized_client", "AADSTS700016: Application with identifier '" + fields["client_id"] + "' was not found in the directory.");
  if (fields.contains("client_assertion")) {
    if (fields["client_assertion_type"] != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
      return refuse(400, "invalid_request", "AADSTS50027: client_assertion_type is not jwt-bearer.");
    const std::string why = assertion_refused(fields["client_assertion"], server_.base_url() + "/" + opts_.tenant_id + "/oauth2/v2.0/token");
    if (!why.empty()) return refuse(401, "invalid_client", why);
  } else if (opts_.client_secret.empty() || fields["client_secret"] != opts_.client_secret) {
    return refuse(401, "invalid_client", "AADSTS7000215: Invalid client secret provided ('" + fields["client_secret"] + "').");
  }
  if (fields["scope"] != kManagementScope)
    return refuse(400, "invalid_scope", "AADSTS1002012: The provided value for scope " + fields["scope"] + " is not valid.");
  return issue();
}

Route FakeAzureCloud::route(const http::LoopbackRequest& req) {
  auto target = fake_cloud::parse_target(req);
  if (!target) return Route::reply(reply_of(arm_error(400, "InvalidQuery", "malformed query: " + target.error().detail)));
  const std::string& path = target->path;
  const std::string& base = server_.base_url();
  const std::string tenant = "/" + opts_.tenant_id;
  if (path == tenant + "/oauth2/v2.0/token") return token(req);
  if (path == tenant + "/v2.0/.well-known/openid-configuration" && req.method == "GET")
    return Route::reply(reply_of({200, {{"token_endpoint", base + tenant + "/oauth2/v2.0/token"},
                                        {"authorization_endpoint", base + tenant + "/oauth2/v2.0/authorize"},
                                        {"issuer", base + tenant + "/v2.0"}, {"tenant_region_scope", "EU"}}, {}}));
  if (path == "/metadata/identity/oauth2/token" || path == "/metadata/instance/compute/subscriptionId") {
    // IMDS: the Metadata header or 400, as Azure's; a VM without an identity answers 400 too
    if (http::find_header(req.headers, "Metadata").value_or("") != "true")
      return Route::reply(reply_of({400, {{"error", "invalid_request"}, {"error_description", "Required metadata header not specified"}}, {}}));
    if (path.ends_with("subscriptionId"))
      return Route::reply({.status = 200, .headers = {{"Content-Type", "text/plain"}}, .body = opts_.arm.subscription});
    if (!opts_.managed_identity)
      return Route::reply(reply_of({400, {{"error", "invalid_request"}, {"error_description", "Identity not found"}}, {}}));
    return Route::to("token", [this] {
      const std::string token = server_.book().issue("eyJ0eXAiOiJKV1QifQ.mi-", server_.clock().now_s() + opts_.token_lifetime_s);
      const std::string lifetime = std::to_string(static_cast<long>(opts_.token_lifetime_s));  // a string, as IMDS sends it
      return reply_of({200, {{"token_type", "Bearer"}, {"expires_in", lifetime}, {"resource", "https://management.azure.com/"},
                             {"access_token", token}}, {}});
    });
  }
  if (path == "/api/retail/prices" && req.method == "GET")
    return Route::to("prices.list", [this, query = target->query] {
      return reply_of(list_retail_prices(query, opts_.retail, prices_url()));
    });
  if (!path.starts_with("/subscriptions/"))
    return Route::reply(reply_of(arm_error(404, "NotFound", "No route for " + req.method + " " + path)));
  auto bearer = fake_cloud::CallBook::bearer(req);
  if (!bearer || !server_.book().valid(*bearer, server_.clock().now_s())) {
    auto r = reply_of(arm_error(401, "InvalidAuthenticationToken",
                                bearer ? "The access token '" + *bearer + "' is invalid or expired."
                                       : "The request did not have a subscription or a valid tenant level resource provider."));
    r.headers.emplace_back("WWW-Authenticate", "Bearer authorization_uri=\"" + base + tenant + "\", error=\"invalid_token\"");
    return Route::refuse(std::move(r));
  }
  ArmCall call{req.method, fake_cloud::split_path(path), target->query, req.body};
  std::string method = arm_method(call);
  if (method.empty()) return Route::reply(reply_of(arm_error(404, "NotFound", "No route for " + req.method + " " + path)));
  if (method == "resourceSkus.list")
    return Route::to(method, [this, query = target->query] {
      return reply_of(list_resource_skus(query, opts_.sku_page_size, server_.base_url(), opts_.arm.subscription));
    });
  return Route::to(method, [this, method, call = std::move(call)] { return reply_of(arm_.handle(method, call)); });
}

}  // namespace tsum::providers::azure::fake
