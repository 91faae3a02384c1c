// HetznerApi: calls to the Hetzner Cloud API (JSON over HTTPS, "Authorization: Bearer <API token>"), over
// HttpClient (with its retries). Failures come back as Errors whose detail names the call, the HTTP status
// and Hetzner's error code:
//   not_found        not_found (404)
//   already_exists   uniqueness_error (a server name in use)
//   unavailable      rate_limit_exceeded, conflict, locked, resource_limit_exceeded, resource_unavailable,
//                    server_error, unavailable, timeout, 5xx, connection failures (after the retries)
//   timeout          no answer within the deadline
//   invalid_argument unauthorized, forbidden, invalid_input and the other 4xx
// No detail ever holds the API token (http/redact.h).
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common/result.h"
#include "providers/http/base_url.h"
#include "providers/http/http_client.h"

namespace tsum::providers::hetzner {

using http::Task;

struct HetznerApiOptions {
  std::string token;
  std::string unusable;  // no token because no login was found: every call fails with this (its fix)
  std::string endpoint;  // base URL, e.g. https://api.hetzner.cloud/v1
  http::HttpClientOptions http = {};
  std::chrono::milliseconds attempt_timeout{30000};
};

class HetznerApi {
 public:
  // invalid_argument for a missing token (and no `unusable`) or a malformed endpoint.
  static Result<std::unique_ptr<HetznerApi>> make(HetznerApiOptions opts);

  // method on <endpoint>/<path_and_query> with a JSON body (empty: none); the answer's JSON ({} for an
  // empty answer). Arguments are read until the task completes: co_await it at once, with named arguments.
  Task<Result<nlohmann::json>> call(const std::string& method, const std::string& path_and_query, const std::string& body);

 private:
  HetznerApi(HetznerApiOptions opts, http::BaseUrl base);
  Error redacted(Error e) const;

  HetznerApiOptions opts_;
  http::BaseUrl base_;
  http::HttpClient http_;
};

}  // namespace tsum::providers::hetzner
