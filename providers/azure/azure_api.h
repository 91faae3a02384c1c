// AzureApi: the calls tsum's Azure adapter makes, over HttpClient (with its retries):
//   Microsoft Entra ID   a token for scope https://management.azure.com/.default by the login's kind
//                        (AzureCredentials): POST <login>/<tenant>/oauth2/v2.0/token with a client secret, a
//                        client assertion or a refresh token, or GET the metadata service's token; the access
//                        token is kept until 5 minutes before it expires and sent as "Authorization: Bearer"
//   Azure Resource Manager  JSON calls on the management endpoint; an answer of 401 drops the token and the
//                        call is tried once more with a fresh one
//   Retail Prices API    unauthenticated GETs on the prices endpoint
// Absolute URLs Azure hands back (Azure-AsyncOperation, Location, nextLink, NextPageLink) are followed only
// when they point at the endpoint's own origin, so the bearer token never goes anywhere else.
// Failures come back as Errors whose detail names the call, the HTTP status and Azure's error code:
//   not_found        404 (ResourceNotFound, ResourceGroupNotFound, ...)
//   already_exists   409 other than the codes below
//   unavailable      429, 5xx, ResourceGroupBeingDeleted, AllocationFailed, ZonalAllocationFailed,
//                    SkuNotAvailable, OperationNotAllowed (quota), connection failures (after the retries)
//   timeout          no answer within the deadline
//   invalid_argument authentication (invalid_client, ...) and request errors (other 4xx)
// No detail ever holds the client secret or an access token (http/redact.h).
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common/clock.h"
#include "common/result.h"
#include "providers/http/http_client.h"

namespace tsum::providers::azure {

using http::Task;

inline constexpr std::string_view kManagementScope = "https://management.azure.com/.default";

// How AzureApi gets its Entra ID tokens (azure_login.h finds them), and the subscription it works in:
//   secret             a service principal's client secret (client-credentials grant)
//   certificate        its certificate: a signed client assertion (RS256, x5t) instead of the secret
//   workload_identity  the federated token in token_file as the client assertion (read for every token)
//   cli_user           the Azure CLI's refresh token for a user (refresh-token grant, the CLI's client id)
//   managed_identity   the instance metadata service at imds_url (identity: "client_id=..." and the like for
//                      a user-assigned identity)
struct AzureCredentials {
  std::string kind = "secret";
  std::string tenant_id = {};
  std::string client_id = {};
  std::string client_secret = {};
  std::string subscription_id = {};
  std::string certificate_path = {};
  std::string certificate_password = {};
  std::string token_file = {};
  std::string refresh_token = {};
  std::string imds_url = {};
  std::string identity = {};
};

struct AzureApiOptions {
  AzureCredentials credentials = {};
  std::string unusable = {};        // no login: every call fails with this (why, and the fix)
  std::string login_endpoint;       // e.g. https://login.microsoftonline.com
  std::string management_endpoint;  // e.g. https://management.azure.com
  std::string prices_endpoint;      // e.g. https://prices.azure.com/api/retail/prices
  http::HttpClientOptions http = {};
  std::chrono::milliseconds attempt_timeout{30000};
  const Clock* clock = nullptr;     // token-expiry time; null: the system clock
};

// An ARM answer: its status (2xx), JSON body ({} when empty; an object, or an array for the few bare lists) and the
// headers of an asynchronous operation.
struct ArmReply {
  int status = 200;
  nlohmann::json body = nlohmann::json::object();
  std::string async_operation = {};  // Azure-AsyncOperation: poll it for {"status": ...}
  std::string location = {};         // Location: poll it until it stops answering 202
};

// Whether url has the origin (scheme, host, port; 443 and 80 implied) of base.
bool same_origin(std::string_view url, std::string_view base);

class AzureApi {
 public:
  // invalid_argument for missing credentials or a malformed endpoint.
  static Result<std::unique_ptr<AzureApi>> make(AzureApiOptions opts);

  // method on <management_endpoint>/<path_and_query> with a JSON body (empty: none). Arguments are read
  // until the task completes: co_await it at once, with named arguments.
  Task<Result<ArmReply>> arm(const std::string& method, const std::string& path_and_query, const std::string& body);
  // GET of an absolute URL ARM handed back (an operation to poll, a nextLink); invalid_argument for a URL
  // of another origin.
  Task<Result<ArmReply>> arm_get(const std::string& url);
  // GET of a Retail Prices URL (the endpoint with a query, or a NextPageLink); its JSON.
  Task<Result<nlohmann::json>> prices(const std::string& url);

  // The endpoints in use, without a trailing '/'.
  const std::string& management_url() const { return management_; }
  const std::string& prices_url() const { return prices_; }
  const AzureApiOptions& options() const { return opts_; }

 private:
  explicit AzureApi(AzureApiOptions opts);
  double now_s() const;
  Task<Status> refresh_token();
  Result<http::HttpRequest> token_request();
  Error redacted(Error e) const;
  Task<Result<ArmReply>> call(const std::string& what, const std::string& method, const std::string& url,
                              const std::string& body);

  AzureApiOptions opts_;
  std::string management_;
  std::string prices_;
  std::string token_url_;
  std::string x5t_, certificate_key_;  // certificate
  int assertions_ = 0;
  SystemClock system_clock_;
  std::string access_token_;
  double token_expires_s_ = 0;
  http::HttpClient http_;
};

}  // namespace tsum::providers::azure
