#include "providers/azure/azure_api.h"

#include "common/json_util.h"
#include "providers/azure/azure_login.h"
#include "providers/gce/jwt.h"
#include "providers/http/base_url.h"
#include "providers/http/login_env.h"
#include "providers/http/codec.h"
#include "providers/http/redact.h"

namespace tsum::providers::azure {

namespace {

constexpr double kRefreshMarginS = 300;

struct AzureError {
  std::string code;
  std::string message;
};

// {"error": {"code", "message"}} from ARM, {"error": "invalid_client", "error_description"} from Entra ID,
// {"Error": {"Code", "Message"}} from the Retail Prices API.
AzureError azure_error(const std::string& body) {
  auto doc = parse_json_safely(body);
  if (!doc || !doc->is_object()) return {"", body.substr(0, 200)};
  if (auto e = doc->find("error"); e != doc->end() && e->is_string())
    return {e->get<std::string>(), doc->value("error_description", "").substr(0, 300)};
  for (const char* key : {"error", "Error"}) {
    auto e = doc->find(key);
    if (e == doc->end() || !e->is_object()) continue;
    return {e->value("code", e->value("Code", "")), e->value("message", e->value("Message", ""))};
  }
  return {"", body.substr(0, 200)};
}

bool unavailable_code(std::string_view code) {
  for (std::string_view c : {"ResourceGroupBeingDeleted", "AllocationFailed", "ZonalAllocationFailed",
                             "SkuNotAvailable", "OperationNotAllowed", "TooManyRequests", "RetryableError"})
    if (code == c) return true;
  return false;
}

Error api_error(const std::string& what, int status, const AzureError& a) {
  std::string detail = what + " (HTTP " + std::to_string(status) + "): " + (a.code.empty() ? "no error code" : a.code) +
                       (a.message.empty() ? "" : ": " + a.message);
  Code c = Code::invalid_argument;
  if (status == 429 || status >= 500 || unavailable_code(a.code)) c = Code::unavailable;
  else if (status == 404) c = Code::not_found;
  else if (status == 409) c = Code::already_exists;
  return make_error(c, detail);
}

// "https://host:443/x" -> "https://host"; "http://h:80" -> "http://h"; else scheme://host[:port].
std::string origin_of(std::string_view url) {
  auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return {};
  std::string_view scheme = url.substr(0, scheme_end);
  std::string_view rest = url.substr(scheme_end + 3);
  std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  if ((scheme == "https" && authority.ends_with(":443")) || (scheme == "http" && authority.ends_with(":80")))
    authority.remove_suffix(scheme == "https" ? 4 : 3);
  std::string out(scheme);
  out += "://";
  for (char c : authority) out += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  return out;
}

Result<std::string> endpoint(const std::string& url, const char* fallback, const char* name) {
  auto base = http::parse_base_url(url.empty() ? std::string(fallback) : url);
  if (!base) return make_error(Code::invalid_argument, std::string("azure: ") + name + " " + base.error().detail);
  std::string out = base->url;
  out.pop_back();  // no trailing '/'
  return out;
}

std::string path_of(const std::string& url) {
  auto scheme_end = url.find("://");
  auto slash = url.find('/', scheme_end == std::string::npos ? 0 : scheme_end + 3);
  return slash == std::string::npos ? "/" : url.substr(slash, url.find('?', slash) - slash);
}

}  // namespace

bool same_origin(std::string_view url, std::string_view base) {
  auto a = origin_of(url);
  return !a.empty() && a == origin_of(base);
}

Result<std::unique_ptr<AzureApi>> AzureApi::make(AzureApiOptions opts) {
  const auto& c = opts.credentials;
  const bool remote = c.kind != "managed_identity";
  if (opts.unusable.empty()) {
    if (c.kind != "secret" && c.kind != "certificate" && c.kind != "workload_identity" && c.kind != "cli_user" && remote)
      return make_error(Code::invalid_argument, "azure: unknown login kind '" + c.kind + "'");
    if (remote && (c.tenant_id.empty() || c.client_id.empty()))
      return make_error(Code::invalid_argument, "azure: no service principal (tenant id and client id)");
    if (c.kind == "secret" && c.client_secret.empty())
      return make_error(Code::invalid_argument, "azure: no client secret for client " + c.client_id);
    if (remote && c.tenant_id.find_first_of("/?#%& ") != std::string::npos)
      return make_error(Code::invalid_argument, "azure: tenant id '" + c.tenant_id + "' is not valid");
  }
  auto login = endpoint(opts.login_endpoint, "https://login.microsoftonline.com", "login");
  if (!login) return login.error();
  auto management = endpoint(opts.management_endpoint, "https://management.azure.com", "management");
  if (!management) return management.error();
  auto prices = endpoint(opts.prices_endpoint, "https://prices.azure.com/api/retail/prices", "prices");
  if (!prices) return prices.error();
  auto api = std::unique_ptr<AzureApi>(new AzureApi(std::move(opts)));
  if (api->opts_.unusable.empty() && api->opts_.credentials.kind == "certificate") {
    auto cert = load_client_certificate(api->opts_.credentials.certificate_path, api->opts_.credentials.certificate_password);
    if (!cert) return cert.error();
    api->x5t_ = cert->x5t;
    api->certificate_key_ = cert->private_key_pem;
  }
  api->management_ = *management;
  api->prices_ = *prices;
  api->token_url_ = *login + "/" + api->opts_.credentials.tenant_id + "/oauth2/v2.0/token";
  return api;
}

AzureApi::AzureApi(AzureApiOptions opts) : opts_(std::move(opts)), http_(opts_.http) {}

double AzureApi::now_s() const { return opts_.clock ? opts_.clock->now_s() : system_clock_.now_s(); }

Error AzureApi::redacted(Error e) const {
  e.detail = http::redact(std::move(e.detail), {access_token_, opts_.credentials.client_secret, opts_.credentials.refresh_token});
  return e;
}

// The token request for the login's kind (azure_api.h's AzureCredentials).
Result<http::HttpRequest> AzureApi::token_request() {
  const auto& c = opts_.credentials;
  if (c.kind == "managed_identity")
    return http::HttpRequest{.method = "GET",
                             .url = imds_token_url(c.imds_url, c.identity),
                             .headers = {{"Metadata", "true"}}, .timeout = opts_.attempt_timeout};
  const bool user = c.kind == "cli_user";  // MSAL asks a user's token with OpenID's scopes beside the resource's
  http::Fields form{{"client_id", c.client_id},
                    {"scope", std::string(kManagementScope) + (user ? " offline_access openid profile" : "")}};
  if (user) {
    form.emplace_back("grant_type", "refresh_token");
    form.emplace_back("refresh_token", c.refresh_token);
  } else {
    form.emplace_back("grant_type", "client_credentials");
    std::string assertion;
    if (c.kind == "secret") {
      form.emplace_back("client_secret", c.client_secret);
    } else if (c.kind == "workload_identity") {
      auto token = http::read_login_file(c.token_file);
      if (!token || http::trim(*token).empty())
        return make_error(Code::invalid_argument, "azure: the federated token file " + c.token_file + " cannot be read");
      assertion = http::trim(*token);
    } else {  // certificate: RFC 7523's client assertion, as MSAL signs it
      const auto now = static_cast<long long>(now_s());
      const nlohmann::json header = {{"alg", "RS256"}, {"typ", "JWT"}, {"x5t", x5t_}};
      const nlohmann::json claims = {{"aud", token_url_}, {"iss", c.client_id}, {"sub", c.client_id},
                                     {"jti", http::sha256_hex(c.client_id + std::to_string(now) + "/" + std::to_string(++assertions_)).substr(0, 32)},
                                     {"nbf", now}, {"iat", now}, {"exp", now + 600}};
      const std::string signing_input = gce::base64url_encode(header.dump()) + "." + gce::base64url_encode(claims.dump());
      auto sig = gce::rs256_sign(certificate_key_, signing_input);
      if (!sig) return make_error(Code::invalid_argument, "azure: the certificate's key cannot sign: " + sig.error().detail);
      assertion = signing_input + "." + gce::base64url_encode(*sig);
    }
    if (!assertion.empty()) {
      form.emplace_back("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer");
      form.emplace_back("client_assertion", assertion);
    }
  }
  return http::HttpRequest{.method = "POST", .url = token_url_, .headers = {{"Content-Type", "application/x-www-form-urlencoded"}},
                           .body = http::form_encode(form), .timeout = opts_.attempt_timeout};
}

Task<Status> AzureApi::refresh_token() {
  const double now = now_s();
  const auto& c = opts_.credentials;
  if (!opts_.unusable.empty()) co_return make_error(Code::invalid_argument, opts_.unusable);
  auto req = token_request();
  if (!req) co_return req.error();
  auto res = co_await http_.send(*req);
  const std::string what = c.kind == "managed_identity" ? "managed identity token from " + c.imds_url
                           : c.kind == "cli_user"       ? "Entra ID token for the Azure CLI's login"
                                                        : "Entra ID token for client " + c.client_id;
  if (!res) co_return redacted(make_error(res.code(), what + ": " + res.error().detail));
  if (res->status != 200) {
    Error e = redacted(api_error(what, res->status, azure_error(res->body)));
    if (c.kind == "cli_user" && (e.detail.find("invalid_grant") != std::string::npos || res->status == 400 || res->status == 401))
      e.detail += "; the Azure CLI's login has expired: run 'az login'";
    co_return e;
  }
  auto doc = parse_json_safely(res->body);
  // expires_in is a number from Entra ID and a string from the metadata service
  double expires_in = -1;
  if (doc && doc->is_object() && doc->contains("expires_in")) {
    const auto& e = (*doc)["expires_in"];
    if (e.is_number()) expires_in = e.get<double>();
    else if (e.is_string()) expires_in = std::strtod(e.get<std::string>().c_str(), nullptr);
  }
  if (!doc || !doc->is_object() || !(*doc)["access_token"].is_string() || !(expires_in > 0))
    co_return make_error(Code::internal, what + ": the answer has no access_token and expires_in");
  access_token_ = (*doc)["access_token"].get<std::string>();
  token_expires_s_ = now + expires_in;
  co_return Status{};
}

Task<Result<ArmReply>> AzureApi::call(const std::string& what, const std::string& method, const std::string& url,
                                      const std::string& body) {
  for (int attempt = 1;; ++attempt) {
    if (access_token_.empty() || now_s() > token_expires_s_ - kRefreshMarginS) {
      auto refreshed = co_await refresh_token();
      if (!refreshed) co_return refreshed.error();
    }
    http::HttpRequest req{.method = method, .url = url, .headers = {{"Authorization", "Bearer " + access_token_}},
                          .body = body, .timeout = opts_.attempt_timeout};
    if (!body.empty()) req.headers.emplace_back("Content-Type", "application/json");
    auto res = co_await http_.send(req);
    if (!res) co_return redacted(make_error(res.code(), what + ": " + res.error().detail));
    if (res->status == 401 && attempt == 1) {
      access_token_.clear();  // revoked or expired early: one more try with a fresh token
      continue;
    }
    if (res->status < 200 || res->status > 299) co_return redacted(api_error(what, res->status, azure_error(res->body)));
    auto doc = parse_json_safely(res->body.empty() ? "{}" : res->body);
    if (!doc || (!doc->is_object() && !doc->is_array()))  // a few lists (image versions) are bare arrays
      co_return make_error(Code::internal, what + ": the answer is not JSON");
    ArmReply out{.status = res->status, .body = std::move(*doc)};
    if (auto h = res->header("Azure-AsyncOperation")) out.async_operation = std::string(*h);
    if (auto h = res->header("Location")) out.location = std::string(*h);
    co_return out;
  }
}

Task<Result<ArmReply>> AzureApi::arm(const std::string& method, const std::string& path_and_query,
                                     const std::string& body) {
  const std::string url = management_ + "/" + path_and_query;
  const std::string what = "ARM " + method + " " + path_of(url);
  co_return co_await call(what, method, url, body);
}

Task<Result<ArmReply>> AzureApi::arm_get(const std::string& url) {
  const std::string what = "ARM GET " + path_of(url);
  if (!same_origin(url, management_))
    co_return make_error(Code::invalid_argument, what + ": the URL is not on " + management_ + "; not following it");
  const std::string method = "GET", body;
  co_return co_await call(what, method, url, body);
}

Task<Result<nlohmann::json>> AzureApi::prices(const std::string& url) {
  const std::string what = "Retail Prices GET " + path_of(url);
  if (!same_origin(url, prices_))
    co_return make_error(Code::invalid_argument, what + ": the URL is not on " + prices_ + "; not following it");
  const http::HttpRequest req{.method = "GET", .url = url, .timeout = opts_.attempt_timeout};
  auto res = co_await http_.send(req);
  if (!res) co_return make_error(res.code(), what + ": " + res.error().detail);
  if (res->status != 200) co_return api_error(what, res->status, azure_error(res->body));
  auto doc = parse_json_safely(res->body);
  if (!doc || !doc->is_object()) co_return make_error(Code::internal, what + ": the answer is not a JSON object");
  co_return std::move(*doc);
}

}  // namespace tsum::providers::azure
