#include "providers/aws/aws_api.h"

#include <nlohmann/json.hpp>

#include "common/json_util.h"
#include "providers/aws/ec2_xml.h"

namespace tsum::providers::aws {

namespace {

bool one_of(std::string_view code, std::initializer_list<std::string_view> codes) {
  for (auto c : codes)
    if (code == c) return true;
  return false;
}

// Maps an AWS error code (EC2's or a JSON service's) and the HTTP status to a tsum error.
Error aws_error(const std::string& what, int status, const std::string& code, const std::string& message) {
  std::string detail = what + " (HTTP " + std::to_string(status) + "): " + (code.empty() ? "no error code" : code) +
                       (message.empty() ? "" : ": " + message);
  Code c = Code::invalid_argument;
  if (code.ends_with("NotFound") || code.ends_with("NotFoundException")) c = Code::not_found;
  else if (code == "IdempotentParameterMismatch") c = Code::already_exists;
  else if (one_of(code, {"RequestLimitExceeded", "Throttling", "ThrottlingException", "InsufficientInstanceCapacity",
                         "InsufficientAddressCapacity", "Unavailable", "ServiceUnavailable", "InternalError",
                         "InternalErrorException"}) || status == 429 || status >= 500)
    c = Code::unavailable;
  return make_error(c, detail);
}

std::chrono::system_clock::time_point to_time_point(double epoch_s) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double>(epoch_s)));
}

// A JSON-protocol error: {"__type": "...#ThrottlingException", "message": "..."} or the x-amzn-ErrorType header.
std::pair<std::string, std::string> json_error(const http::HttpResponse& r) {
  std::string code, message;
  if (auto h = r.header("x-amzn-ErrorType")) code = std::string(h->substr(0, h->find(':')));
  if (auto doc = parse_json_safely(r.body); doc && doc->is_object()) {
    if (code.empty()) code = doc->value("__type", "");
    message = doc->value("message", doc->value("Message", ""));
  }
  if (auto hash = code.rfind('#'); hash != std::string::npos) code = code.substr(hash + 1);
  return {code, message};
}

// The headers of a JSON 1.1 protocol call (built outside the coroutine: GCC 12 cannot keep a braced list there).
http::HttpHeaders json_headers(std::string_view target) {
  return {{"Content-Type", "application/x-amz-json-1.1"}, {"X-Amz-Target", std::string(target)}};
}

}  // namespace

Result<std::unique_ptr<AwsApi>> AwsApi::make(AwsApiOptions opts) {
  if (opts.region.empty()) return make_error(Code::invalid_argument, "aws: no region");
  if (!opts.credential_source && (opts.credentials.access_key_id.empty() || opts.credentials.secret_access_key.empty()))
    return make_error(Code::invalid_argument, "aws: no credentials (access key id and secret access key)");
  auto ec2 = parse_base_url(opts.ec2_endpoint);
  if (!ec2) return ec2.error();
  auto pricing = parse_base_url(opts.pricing_endpoint);
  if (!pricing) return pricing.error();
  if (opts.ssm_endpoint.empty()) opts.ssm_endpoint = "https://ssm." + opts.region + ".amazonaws.com";
  auto ssm = parse_base_url(opts.ssm_endpoint);
  if (!ssm) return ssm.error();
  if (opts.quotas_endpoint.empty()) opts.quotas_endpoint = "https://servicequotas." + opts.region + ".amazonaws.com";
  auto quotas = parse_base_url(opts.quotas_endpoint);
  if (!quotas) return quotas.error();
  return std::unique_ptr<AwsApi>(
      new AwsApi(std::move(opts), std::move(*ec2), std::move(*pricing), std::move(*ssm), std::move(*quotas)));
}

AwsApi::AwsApi(AwsApiOptions opts, BaseUrl ec2, BaseUrl pricing, BaseUrl ssm, BaseUrl quotas)
    : opts_(std::move(opts)), ec2_(std::move(ec2)), pricing_(std::move(pricing)), ssm_(std::move(ssm)),
      quotas_(std::move(quotas)), http_(opts_.http) {}

Task<Result<Credentials>> AwsApi::credentials() {
  if (!opts_.credential_source) co_return opts_.credentials;
  co_return co_await opts_.credential_source->get();
}

Result<http::HttpRequest> AwsApi::signed_post(const BaseUrl& base, const std::string& region, const char* service,
                                              http::HttpHeaders headers, const std::string& body, const Credentials& creds) const {
  headers.emplace(headers.begin(), "Host", base.host);
  SignableRequest req{.method = "POST", .path = base.path, .headers = headers, .body = body};
  const Clock& clock = opts_.clock ? *opts_.clock : system_clock_;
  SignOptions so{.region = region, .service = service, .amz_date = amz_date(to_time_point(clock.now_s()))};
  auto s = sign(req, creds, so);
  if (!s) return s.error();
  headers.insert(headers.end(), s->added_headers.begin(), s->added_headers.end());
  return http::HttpRequest{.method = "POST", .url = base.url, .headers = std::move(headers), .body = body,
                           .timeout = opts_.attempt_timeout};
}

Task<Result<XmlNode>> AwsApi::ec2(std::string_view action, const Fields& params) {
  Fields all{{"Action", std::string(action)}, {"Version", std::string(kEc2ApiVersion)}};
  all.insert(all.end(), params.begin(), params.end());
  http::HttpHeaders headers{{"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}};
  auto creds = co_await credentials();
  if (!creds) co_return creds.error();
  auto req = signed_post(ec2_, opts_.region, "ec2", std::move(headers), form_encode(all), *creds);
  if (!req) co_return req.error();
  const http::HttpRequest& signed_req = *req;
  auto res = co_await http_.send(signed_req);
  const std::string what = "EC2 " + std::string(action);
  if (!res) co_return make_error(res.code(), what + ": " + res.error().detail);
  if (res->status != 200) {
    auto e = parse_ec2_error(res->body);
    co_return aws_error(what, res->status, e ? e->code : "", e ? e->message : res->body.substr(0, 200));
  }
  auto root = parse_xml(res->body);
  if (!root) co_return make_error(Code::internal, what + ": " + root.error().detail);
  co_return std::move(*root);
}

Task<Result<std::string>> AwsApi::pricing(std::string_view target, const std::string& json_body) {
  co_return co_await json_call(pricing_, opts_.pricing_region, "pricing", target, json_body, "Price List " + std::string(target));
}

Task<Result<std::string>> AwsApi::ssm(std::string_view target, const std::string& json_body) {
  co_return co_await json_call(ssm_, opts_.region, "ssm", target, json_body, "SSM " + std::string(target));
}

Task<Result<std::string>> AwsApi::service_quotas(std::string_view target, const std::string& json_body) {
  co_return co_await json_call(quotas_, opts_.region, "servicequotas", target, json_body, "Service Quotas " + std::string(target));
}

Task<Result<std::string>> AwsApi::json_call(const BaseUrl& base, const std::string& region, const char* service,
                                            std::string_view target, const std::string& json_body, const std::string& what) {
  http::HttpHeaders headers = json_headers(target);
  auto creds = co_await credentials();
  if (!creds) co_return creds.error();
  auto req = signed_post(base, region, service, std::move(headers), json_body, *creds);
  if (!req) co_return req.error();
  const http::HttpRequest& signed_req = *req;
  auto res = co_await http_.send(signed_req);
  if (!res) co_return make_error(res.code(), what + ": " + res.error().detail);
  if (res->status != 200) {
    auto [code, message] = json_error(*res);
    co_return aws_error(what, res->status, code, message);
  }
  co_return std::move(res->body);
}

}  // namespace tsum::providers::aws
