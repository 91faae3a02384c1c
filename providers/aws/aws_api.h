// AwsApi: signed calls to the AWS APIs the provider uses, over HttpClient (with its retries):
//   - EC2's Query API: POST of form-encoded Action/Version/parameters; the answer is XML.
//   - the Price List API and SSM: POST of JSON with an X-Amz-Target (JSON 1.1 protocol); the answer is JSON.
// (STS, for logins, is aws_login.h's.)
// Failures come back as Errors whose detail names the action, the HTTP status and AWS's own error code:
//   not_found        *.NotFound (e.g. InvalidInstanceID.NotFound)
//   already_exists   IdempotentParameterMismatch (a client token reused with other parameters)
//   unavailable      throttling, capacity, 5xx, connection failures (after the client's retries)
//   timeout          no answer within the deadline
//   invalid_argument authentication and request errors (other 4xx)
#pragma once

#include <chrono>
#include <string>

#include "common/clock.h"
#include "common/result.h"
#include "providers/aws/aws_login.h"
#include "providers/aws/codec.h"
#include "providers/aws/sigv4.h"
#include "providers/aws/xml.h"
#include "providers/http/base_url.h"
#include "providers/http/http_client.h"

namespace tsum::providers::aws {

using http::Task;

struct AwsApiOptions {
  std::string region;                   // of the EC2 endpoint
  Credentials credentials = {};         // static keys, or:
  std::shared_ptr<AwsCredentialSource> credential_source = {};  // a login's, shared by every region's API
  std::string ec2_endpoint;             // base URL, e.g. https://ec2.us-east-1.amazonaws.com
  std::string pricing_endpoint;         // base URL, e.g. https://api.pricing.us-east-1.amazonaws.com
  std::string pricing_region = "us-east-1";
  std::string ssm_endpoint;             // base URL, e.g. https://ssm.us-east-1.amazonaws.com
  std::string quotas_endpoint = {};     // Service Quotas' base URL; empty: https://servicequotas.<region>.amazonaws.com
  http::HttpClientOptions http = {};
  std::chrono::milliseconds attempt_timeout{30000};
  const Clock* clock = nullptr;         // signing time; null: the system clock
};

using http::BaseUrl;
using http::parse_base_url;

class AwsApi {
 public:
  // invalid_argument for a missing region or credentials, or a malformed endpoint.
  static Result<std::unique_ptr<AwsApi>> make(AwsApiOptions opts);

  // EC2 Action with params (Action and Version are added); the answer's root element. Arguments are read
  // until the task completes: co_await it at once, with named arguments (see http_client.h).
  Task<Result<XmlNode>> ec2(std::string_view action, const Fields& params);

  // A Price List API operation ("AWSPriceListService.GetProducts") with a JSON body; the answer's body.
  Task<Result<std::string>> pricing(std::string_view target, const std::string& json_body);
  // A Systems Manager operation ("AmazonSSM.GetParameter") in the API's region; the answer's body.
  Task<Result<std::string>> ssm(std::string_view target, const std::string& json_body);
  // A Service Quotas call (X-Amz-Target ServiceQuotasV20190624.*, JSON 1.1, service "servicequotas").
  Task<Result<std::string>> service_quotas(std::string_view target, const std::string& json_body);

  const AwsApiOptions& options() const { return opts_; }

 private:
  AwsApi(AwsApiOptions opts, BaseUrl ec2, BaseUrl pricing, BaseUrl ssm, BaseUrl quotas);
  Task<Result<std::string>> json_call(const BaseUrl& base, const std::string& region, const char* service,
                                      std::string_view target, const std::string& json_body, const std::string& what);
  Task<Result<Credentials>> credentials();
  Result<http::HttpRequest> signed_post(const BaseUrl& base, const std::string& region, const char* service,
                                        http::HttpHeaders headers, const std::string& body, const Credentials& creds) const;

  AwsApiOptions opts_;
  BaseUrl ec2_;
  BaseUrl pricing_;
  BaseUrl ssm_;
  BaseUrl quotas_;
  SystemClock system_clock_;
  http::HttpClient http_;
};

}  // namespace tsum::providers::aws
