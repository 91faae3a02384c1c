// GceApi: authorized JSON calls to the two Google APIs tsum's GCE adapter uses, over HttpClient (with its
// retries): Compute Engine (compute/v1) and the Cloud Billing Catalog (v1).
//
// Authorization: an OAuth2 access token, kept until 5 minutes before it expires and sent as "Authorization:
// Bearer", from a service-account JWT (jwt.h) exchanged at the token endpoint, or with a user's login
// (gce_login.h) from its refresh token at the token endpoint or from the metadata server. An API answer of 401
// drops the token and the call is tried once more with a fresh one.
// Failures come back as Errors whose detail names the call, the HTTP status and Google's reason:
//   not_found        404
//   already_exists   409 (alreadyExists: an instance name in use)
//   unavailable      429, 5xx, rateLimitExceeded, connection failures (after the client's retries)
//   timeout          no answer within the deadline
//   invalid_argument authentication and request errors (other 4xx; the token endpoint's invalid_grant)
// No detail ever holds the private key, the assertion or an access token (http/redact.h).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>

#include "common/clock.h"
#include "common/result.h"
#include "providers/gce/gce_login.h"
#include "providers/gce/jwt.h"
#include "providers/http/base_url.h"
#include "providers/http/http_client.h"

namespace tsum::providers::gce {

using http::Task;

struct GceApiOptions {
  ServiceAccount account = {};   // unless `login` says otherwise
  std::optional<GceCredentials> login = {};  // the user's login (gce_login.h); a service account's replaces account
  std::string unusable = {};     // no login was found: every call fails with this (its fix)
  std::string compute_endpoint;  // base URL, e.g. https://compute.googleapis.com/compute/v1
  std::string billing_endpoint;  // base URL, e.g. https://cloudbilling.googleapis.com/v1
  std::string token_endpoint;    // the token URL (and the JWT's audience); empty: account.token_uri
  std::string scope = std::string(kCloudPlatformScope);
  http::HttpClientOptions http = {};
  std::chrono::milliseconds attempt_timeout{30000};
  const Clock* clock = nullptr;  // JWT and token-expiry time; null: the system clock
};

class GceApi {
 public:
  // invalid_argument for an account without email or key (and no login or `unusable`), or a malformed endpoint.
  static Result<std::unique_ptr<GceApi>> make(GceApiOptions opts);

  // method on <compute_endpoint>/<path_and_query> with a JSON body (empty: none); the answer's JSON.
  // Arguments are read until the task completes: co_await it at once, with named arguments.
  Task<Result<nlohmann::json>> compute(const std::string& method, const std::string& path_and_query,
                                       const std::string& body);

  // GET <billing_endpoint>/<path_and_query>; the answer's JSON.
  Task<Result<nlohmann::json>> billing(const std::string& path_and_query);

  const GceApiOptions& options() const { return opts_; }

 private:
  GceApi(GceApiOptions opts, http::BaseUrl compute, http::BaseUrl billing);
  double now_s() const;
  // A new access token: a new assertion exchanged, the user's refresh token exchanged, or the metadata server's.
  Task<Status> refresh_token();
  // How tokens are got: "service_account" (the account's JWT), or the login's kind.
  const std::string& login_kind() const;
  // The token request for the credentials held.
  Result<http::HttpRequest> token_request(double now);
  // e with every credential this client holds removed from its detail.
  Error redacted(Error e) const;
  Task<Result<nlohmann::json>> call(const std::string& what, const std::string& method, const std::string& url,
                                    const std::string& body);

  GceApiOptions opts_;
  http::BaseUrl compute_;
  http::BaseUrl billing_;
  SystemClock system_clock_;
  std::string access_token_;
  double token_expires_s_ = 0;
  std::string last_assertion_;
  http::HttpClient http_;
};

}  // namespace tsum::providers::gce
