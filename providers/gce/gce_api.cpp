#include "providers/gce/gce_api.h"

#include "common/json_util.h"
#include "providers/http/codec.h"
#include "providers/http/redact.h"

namespace tsum::providers::gce {

namespace {

constexpr double kRefreshMarginS = 300;
constexpr std::string_view kJwtBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer";

struct GoogleError {
  std::string reason;
  std::string message;
};

// {"error": {"code", "message", "status", "errors": [{"reason", "message"}]}} from the APIs, or
// {"error": "invalid_grant", "error_description": "..."} from the token endpoint.
GoogleError google_error(const std::string& body) {
  auto doc = parse_json_safely(body);
  if (!doc || !doc->is_object() || !doc->contains("error")) return {"", body.substr(0, 200)};
  const auto& e = (*doc)["error"];
  if (e.is_string()) return {e.get<std::string>(), doc->value("error_description", "")};
  if (!e.is_object()) return {"", body.substr(0, 200)};
  GoogleError out{e.value("status", ""), e.value("message", "")};
  if (auto errors = e.find("errors"); errors != e.end() && errors->is_array() && !errors->empty() &&
                                      (*errors)[0].is_object())
    out.reason = (*errors)[0].value("reason", out.reason);
  return out;
}

Error api_error(const std::string& what, int status, const GoogleError& g) {
  std::string detail = what + " (HTTP " + std::to_string(status) + "): " + (g.reason.empty() ? "no reason" : g.reason) +
                       (g.message.empty() ? "" : ": " + g.message);
  Code c = Code::invalid_argument;
  if (status == 404) c = Code::not_found;
  else if (status == 409) c = Code::already_exists;
  else if (status == 429 || status >= 500 || g.reason == "rateLimitExceeded" || g.reason == "userRateLimitExceeded")
    c = Code::unavailable;
  return make_error(c, detail);
}

Result<http::BaseUrl> endpoint(const std::string& url, const char* fallback) {
  return http::parse_base_url(url.empty() ? std::string(fallback) : url);
}

}  // namespace

Result<std::unique_ptr<GceApi>> GceApi::make(GceApiOptions opts) {
  if (opts.login && opts.login->kind == "service_account") opts.account = opts.login->account;
  if (opts.login && opts.login->kind == "authorized_user" && opts.token_endpoint.empty())
    opts.token_endpoint = opts.login->user.token_uri;
  const bool other = opts.unusable.size() || (opts.login && opts.login->kind != "service_account");
  if (!other && (opts.account.client_email.empty() || opts.account.private_key_pem.empty()))
    return make_error(Code::invalid_argument, "gce: no service account (client_email and private_key)");
  auto compute = endpoint(opts.compute_endpoint, "https://compute.googleapis.com/compute/v1");
  if (!compute) return compute.error();
  auto billing = endpoint(opts.billing_endpoint, "https://cloudbilling.googleapis.com/v1");
  if (!billing) return billing.error();
  if (opts.token_endpoint.empty()) opts.token_endpoint = opts.account.token_uri;
  auto token = http::parse_base_url(opts.token_endpoint);
  if (!token) return make_error(Code::invalid_argument, "token " + token.error().detail);
  return std::unique_ptr<GceApi>(new GceApi(std::move(opts), std::move(*compute), std::move(*billing)));
}

GceApi::GceApi(GceApiOptions opts, http::BaseUrl compute, http::BaseUrl billing)
    : opts_(std::move(opts)), compute_(std::move(compute)), billing_(std::move(billing)), http_(opts_.http) {}

double GceApi::now_s() const { return opts_.clock ? opts_.clock->now_s() : system_clock_.now_s(); }

Error GceApi::redacted(Error e) const {
  const std::string refresh = opts_.login ? opts_.login->user.refresh_token : "";
  const std::string secret = opts_.login ? opts_.login->user.client_secret : "";
  e.detail = http::redact(std::move(e.detail), {access_token_, last_assertion_, opts_.account.private_key_pem, refresh, secret});
  return e;
}

const std::string& GceApi::login_kind() const {
  static const std::string service_account = "service_account";
  return opts_.login ? opts_.login->kind : service_account;
}

Result<http::HttpRequest> GceApi::token_request(double now) {
  const std::string& kind = login_kind();
  http::HttpRequest req{.method = "POST", .url = opts_.token_endpoint,
                        .headers = {{"Content-Type", "application/x-www-form-urlencoded"}}, .timeout = opts_.attempt_timeout};
  if (kind == "metadata") {
    req = {.method = "GET",
           .url = "http://" + opts_.login->metadata_host + "/computeMetadata/v1/instance/service-accounts/default/token",
           .headers = {{"Metadata-Flavor", "Google"}}, .timeout = opts_.attempt_timeout};
  } else if (kind == "authorized_user") {
    const auto& u = opts_.login->user;
    req.body = http::form_encode({{"grant_type", "refresh_token"}, {"client_id", u.client_id},
                                  {"client_secret", u.client_secret}, {"refresh_token", u.refresh_token}});
  } else {
    auto assertion = make_assertion(opts_.account, opts_.scope, opts_.token_endpoint, static_cast<long long>(now));
    if (!assertion) return assertion.error();
    last_assertion_ = *assertion;
    req.body = http::form_encode({{"grant_type", std::string(kJwtBearerGrant)}, {"assertion", *assertion}});
  }
  return req;
}

Task<Status> GceApi::refresh_token() {
  if (!opts_.unusable.empty()) co_return make_error(Code::invalid_argument, opts_.unusable);
  const double now = now_s();
  auto req = token_request(now);
  if (!req) co_return req.error();
  auto res = co_await http_.send(*req);
  const std::string& kind = login_kind();
  const std::string what = kind == "metadata"          ? "OAuth2 token from the metadata server"
                           : kind == "authorized_user" ? "OAuth2 token for client " + opts_.login->user.client_id
                                                       : "OAuth2 token for " + opts_.account.client_email;
  if (!res) co_return redacted(make_error(res.code(), what + ": " + res.error().detail));
  if (res->status != 200) {
    Error e = redacted(api_error(what, res->status, google_error(res->body)));
    if (kind == "authorized_user" && google_error(res->body).reason == "invalid_grant")
      e.detail += "; run 'gcloud auth application-default login' again";
    co_return e;
  }
  auto doc = parse_json_safely(res->body);
  if (!doc || !doc->is_object() || !(*doc)["access_token"].is_string() || !(*doc)["expires_in"].is_number())
    co_return make_error(Code::internal, what + ": the answer has no access_token and expires_in");
  access_token_ = (*doc)["access_token"].get<std::string>();
  token_expires_s_ = now + (*doc)["expires_in"].get<double>();
  co_return Status{};
}

Task<Result<nlohmann::json>> GceApi::call(const std::string& what, const std::string& method, const std::string& url,
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
    if (res->status < 200 || res->status > 299) co_return redacted(api_error(what, res->status, google_error(res->body)));
    auto doc = parse_json_safely(res->body.empty() ? "{}" : res->body);
    if (!doc || !doc->is_object()) co_return make_error(Code::internal, what + ": the answer is not a JSON object");
    co_return std::move(*doc);
  }
}

Task<Result<nlohmann::json>> GceApi::compute(const std::string& method, const std::string& path_and_query,
                                             const std::string& body) {
  const std::string what = "Compute " + method + " " + path_and_query.substr(0, path_and_query.find('?'));
  const std::string url = compute_.url + path_and_query;
  co_return co_await call(what, method, url, body);
}

Task<Result<nlohmann::json>> GceApi::billing(const std::string& path_and_query) {
  const std::string what = "Cloud Billing GET " + path_and_query.substr(0, path_and_query.find('?'));
  const std::string url = billing_.url + path_and_query;
  const std::string method = "GET", body;
  co_return co_await call(what, method, url, body);
}

}  // namespace tsum::providers::gce
