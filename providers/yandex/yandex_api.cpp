#include "providers/yandex/yandex_api.h"

#include <ctime>

#include "common/json_util.h"
#include "providers/http/base_url.h"
#include "providers/http/redact.h"

namespace tsum::providers::yandex {

namespace {

constexpr double kRefreshMarginS = 300;

constexpr std::string_view grpc_code_name(int code) {
  constexpr std::string_view kNames[] = {"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
                                         "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
                                         "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
                                         "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
  return code >= 0 && code <= 16 ? kNames[code] : "no gRPC code";
}

// {"code": 5, "message": "...", "details": [...]}
Error api_error(const std::string& what, int status, const std::string& body) {
  std::string code_name = "no gRPC code", message = body.substr(0, 200);
  if (auto doc = parse_json_safely(body); doc && doc->is_object()) {
    if (auto c = doc->find("code"); c != doc->end() && c->is_number_integer()) code_name = grpc_code_name(c->get<int>());
    message = doc->value("message", "");
  }
  Code c = Code::invalid_argument;
  if (status == 404) c = Code::not_found;
  else if (status == 409) c = Code::already_exists;
  else if (status == 429 || status >= 500) c = Code::unavailable;
  return make_error(c, what + " (HTTP " + std::to_string(status) + "): " + code_name + (message.empty() ? "" : ": " + message));
}

Result<std::string> endpoint(const std::string& url, const char* fallback, const char* name) {
  auto base = http::parse_base_url(url.empty() ? std::string(fallback) : url);
  if (!base) return make_error(Code::invalid_argument, std::string("yandex: ") + name + " " + base.error().detail);
  return base->url;
}

}  // namespace


Result<std::unique_ptr<YandexApi>> YandexApi::make(YandexApiOptions opts) {
  const bool other = !opts.oauth_token.empty() || opts.metadata || !opts.unusable.empty();
  if (!other && (opts.key.id.empty() || opts.key.service_account_id.empty() || opts.key.private_key_pem.empty()))
    return make_error(Code::invalid_argument, "yandex: no authorized key (id, service_account_id and private_key)");
  if (opts.iam_endpoint.empty()) opts.iam_endpoint = std::string(kDefaultIamTokenUrl);
  if (auto iam = http::parse_base_url(opts.iam_endpoint); !iam) return make_error(Code::invalid_argument, "yandex: IAM " + iam.error().detail);
  auto compute = endpoint(opts.compute_endpoint, "https://compute.api.cloud.yandex.net/compute/v1", "compute");
  if (!compute) return compute.error();
  auto operation = endpoint(opts.operation_endpoint, "https://operation.api.cloud.yandex.net/operations", "operation");
  if (!operation) return operation.error();
  auto billing = endpoint(opts.billing_endpoint, "https://billing.api.cloud.yandex.net/billing/v1", "billing");
  if (!billing) return billing.error();
  auto vpc = endpoint(opts.vpc_endpoint, "https://vpc.api.cloud.yandex.net/vpc/v1", "vpc");
  if (!vpc) return vpc.error();
  auto api = std::unique_ptr<YandexApi>(new YandexApi(std::move(opts)));
  api->vpc_ = *vpc;
  api->compute_ = *compute;
  api->operation_ = *operation;
  api->billing_ = *billing;
  return api;
}

YandexApi::YandexApi(YandexApiOptions opts) : opts_(std::move(opts)), http_(opts_.http) {}

double YandexApi::now_s() const { return opts_.clock ? opts_.clock->now_s() : system_clock_.now_s(); }

Error YandexApi::redacted(Error e) const {
  e.detail = http::redact(std::move(e.detail), {iam_token_, last_jwt_, opts_.key.private_key_pem, opts_.oauth_token});
  return e;
}

http::HttpRequest YandexApi::token_request(const std::string& jwt) const {
  if (opts_.metadata)
    return {.method = "GET", .url = "http://" + opts_.metadata_host + "/computeMetadata/v1/instance/service-accounts/default/token",
            .headers = {{"Metadata-Flavor", "Google"}}, .timeout = opts_.attempt_timeout};
  const nlohmann::json body = opts_.oauth_token.empty() ? nlohmann::json{{"jwt", jwt}}
                                                        : nlohmann::json{{"yandexPassportOauthToken", opts_.oauth_token}};
  return {.method = "POST", .url = opts_.iam_endpoint, .headers = {{"Content-Type", "application/json"}},
          .body = body.dump(), .timeout = opts_.attempt_timeout};
}

Task<Status> YandexApi::refresh_token() {
  if (!opts_.unusable.empty()) co_return make_error(Code::invalid_argument, opts_.unusable);
  const double now = now_s();
  std::string jwt;
  if (opts_.oauth_token.empty() && !opts_.metadata) {
    auto made = make_ps256_jwt(opts_.key, opts_.iam_endpoint, static_cast<long long>(now));
    if (!made) co_return made.error();
    jwt = last_jwt_ = *made;
  }
  const http::HttpRequest req = token_request(jwt);
  auto res = co_await http_.send(req);
  const std::string what = opts_.metadata               ? std::string("IAM token from the metadata server")
                           : !opts_.oauth_token.empty() ? std::string("IAM token for the OAuth token")
                                                        : "IAM token for service account " + opts_.key.service_account_id;
  if (!res) co_return redacted(make_error(res.code(), what + ": " + res.error().detail));
  if (res->status != 200) {
    Error e = redacted(api_error(what, res->status, res->body));
    if (!opts_.oauth_token.empty()) e.detail += "; get a new OAuth token and run 'yc init' again";
    co_return e;
  }
  auto doc = parse_json_safely(res->body);
  if (opts_.metadata) {  // Google's shape: access_token, expires_in
    if (!doc || !doc->is_object() || !(*doc)["access_token"].is_string() || !(*doc)["expires_in"].is_number())
      co_return make_error(Code::internal, what + ": the answer has no access_token and expires_in");
    iam_token_ = (*doc)["access_token"].get<std::string>();
    token_expires_s_ = now + (*doc)["expires_in"].get<double>();
    co_return Status{};
  }
  if (!doc || !doc->is_object() || !(*doc)["iamToken"].is_string() || !(*doc)["expiresAt"].is_string())
    co_return make_error(Code::internal, what + ": the answer has no iamToken and expiresAt");
  auto expires = parse_rfc3339((*doc)["expiresAt"].get<std::string>());
  if (!expires) co_return make_error(Code::internal, what + ": expiresAt: " + expires.error().detail);
  iam_token_ = (*doc)["iamToken"].get<std::string>();
  token_expires_s_ = *expires;
  co_return Status{};
}

Task<Result<nlohmann::json>> YandexApi::call(Service service, const std::string& method, const std::string& path_and_query,
                                             const std::string& body) {
  const std::string& base = service == Service::compute     ? compute_
                            : service == Service::operation ? operation_
                            : service == Service::vpc       ? vpc_
                                                            : billing_;
  const char* name = service == Service::compute     ? "Compute "
                     : service == Service::operation ? "Operation "
                     : service == Service::vpc       ? "VPC "
                                                     : "Billing ";
  const std::string what = name + method + " /" + path_and_query.substr(0, path_and_query.find('?'));
  for (int attempt = 1;; ++attempt) {
    if (iam_token_.empty() || now_s() > token_expires_s_ - kRefreshMarginS) {
      auto refreshed = co_await refresh_token();
      if (!refreshed) co_return refreshed.error();
    }
    http::HttpRequest req{.method = method, .url = base + path_and_query,
                          .headers = {{"Authorization", "Bearer " + iam_token_}}, .body = body, .timeout = opts_.attempt_timeout};
    if (!body.empty()) req.headers.emplace_back("Content-Type", "application/json");
    auto res = co_await http_.send(req);
    if (!res) co_return redacted(make_error(res.code(), what + ": " + res.error().detail));
    if (res->status == 401 && attempt == 1) {
      iam_token_.clear();  // revoked or expired early: one more try with a fresh token
      continue;
    }
    if (res->status < 200 || res->status > 299) co_return redacted(api_error(what, res->status, res->body));
    auto doc = parse_json_safely(res->body.empty() ? "{}" : res->body);
    if (!doc || !doc->is_object()) co_return make_error(Code::internal, what + ": the answer is not a JSON object");
    co_return std::move(*doc);
  }
}

}  // namespace tsum::providers::yandex
