// YandexApi: authorized JSON calls to the Yandex Cloud REST APIs tsum's adapter uses, over HttpClient (with
// its retries): Compute (compute/v1), Operation (operations/{id}), Billing (billing/v1) and VPC (vpc/v1).
//
// Authorization: a PS256 JWT made from the service account's authorized key (ps256_jwt.h), or a user's OAuth
// token, is exchanged at the IAM token endpoint (POST {"jwt": ...} / {"yandexPassportOauthToken": ...}) for an
// IAM token (on a VM with a service account, the metadata server gives one), kept until 5 minutes before its expiresAt and
// sent as "Authorization: Bearer". An API answer of 401 drops the token and the call is tried once more
// with a fresh one.
// Failures come back as Errors whose detail names the call, the HTTP status and Yandex's gRPC code and
// message:
//   not_found        404 (NOT_FOUND)
//   already_exists   409 (ALREADY_EXISTS: an instance name in use in the folder)
//   unavailable      429 (RESOURCE_EXHAUSTED), 5xx (UNAVAILABLE, INTERNAL), connection failures
//   timeout          no answer within the deadline
//   invalid_argument authentication and request errors (other 4xx)
// No detail ever holds the private key, the JWT or an IAM token (http/redact.h).
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common/clock.h"
#include "common/result.h"
#include "providers/http/codec.h"
#include "providers/http/http_client.h"
#include "providers/yandex/ps256_jwt.h"

namespace tsum::providers::yandex {

using http::Task;

enum class Service { compute, operation, billing, vpc };

struct YandexApiOptions {
  AuthorizedKey key = {};
  std::string oauth_token = {};  // instead of key: a user's OAuth token (the yc CLI's), exchanged for IAM tokens
  bool metadata = false;         // instead of both: the VM's service account, from the metadata server
  std::string metadata_host = "169.254.169.254";
  std::string unusable = {};     // no login was found: every call fails with this (its fix)
  std::string iam_endpoint;        // the token URL (and the JWT's audience), e.g. https://iam.api.cloud.yandex.net/iam/v1/tokens
  std::string compute_endpoint;    // e.g. https://compute.api.cloud.yandex.net/compute/v1
  std::string operation_endpoint;  // e.g. https://operation.api.cloud.yandex.net/operations
  std::string billing_endpoint;    // e.g. https://billing.api.cloud.yandex.net/billing/v1
  std::string vpc_endpoint;        // e.g. https://vpc.api.cloud.yandex.net/vpc/v1
  http::HttpClientOptions http = {};
  std::chrono::milliseconds attempt_timeout{30000};
  const Clock* clock = nullptr;    // JWT and token-expiry time; null: the system clock
};

using http::parse_rfc3339;

class YandexApi {
 public:
  // invalid_argument for a key without id, account or private key (and no other login), or a malformed endpoint.
  static Result<std::unique_ptr<YandexApi>> make(YandexApiOptions opts);

  // method on <service endpoint>/<path_and_query> with a JSON body (empty: none); the answer's JSON.
  // Arguments are read until the task completes: co_await it at once, with named arguments.
  Task<Result<nlohmann::json>> call(Service service, const std::string& method, const std::string& path_and_query,
                                    const std::string& body);

  const YandexApiOptions& options() const { return opts_; }

 private:
  explicit YandexApi(YandexApiOptions opts);
  double now_s() const;
  Task<Status> refresh_token();
  http::HttpRequest token_request(const std::string& jwt) const;
  Error redacted(Error e) const;

  YandexApiOptions opts_;
  std::string compute_, operation_, billing_, vpc_;  // with a trailing '/'
  SystemClock system_clock_;
  std::string iam_token_;
  double token_expires_s_ = 0;
  std::string last_jwt_;
  http::HttpClient http_;
};

}  // namespace tsum::providers::yandex
