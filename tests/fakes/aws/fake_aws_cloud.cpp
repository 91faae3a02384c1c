#include "tests/fakes/aws/fake_aws_cloud.h"

#include "providers/aws/ec2_xml.h"
#include "tests/fakes/aws/fake_auth.h"
#include "tests/fakes/aws/fake_catalog.h"

namespace tsum::providers::aws::fake {

namespace {

constexpr std::string_view kPricingRegion = "us-east-1";
constexpr std::string_view kPricingPrefix = "AWSPriceListService.";

http::LoopbackReply reply_of(FakeAnswer a) {
  a.headers.emplace_back("Content-Type", a.content_type);
  return {.status = a.status, .headers = std::move(a.headers), .body = std::move(a.body)};
}

// EC2 parameters: the form body of a POST and the query string.
Result<Fields> query_params(const http::LoopbackRequest& req) {
  Fields params;
  if (auto q = req.target.find('?'); q != std::string::npos) {
    auto from_query = parse_query(std::string_view(req.target).substr(q + 1));
    if (!from_query) return from_query.error();
    params = std::move(*from_query);
  }
  auto type = http::find_header(req.headers, "Content-Type");
  if (req.method == "POST" && type && type->starts_with("application/x-www-form-urlencoded")) {
    auto from_body = parse_query(req.body, /*plus_is_space=*/true);
    if (!from_body) return from_body.error();
    params.insert(params.end(), from_body->begin(), from_body->end());
  }
  return params;
}

}  // namespace

FakeAwsCloud::FakeAwsCloud(FakeAwsCloudOptions opts)
    : opts_(std::move(opts)), ec2_(opts_.ec2, fake_cloud::clock_or_system(opts_.server.clock)), server_(opts_.server, *this) {}

Status FakeAwsCloud::guest_shutdown(std::string_view id) {
  Status s = ec2_.guest_shutdown(id);
  server_.sync_guests();
  return s;
}

std::vector<fake_guest::LiveInstance> FakeAwsCloud::live_guests() const {
  std::vector<fake_guest::LiveInstance> up;
  for (auto& i : ec2_.instances())
    if (i.state == "pending" || i.state == "running") up.push_back({i.id, std::move(i.user_data)});
  return up;
}

Status FakeAwsCloud::interrupt(const std::string& id, std::optional<double> notice_s) {
  return ec2_.interrupt(id, notice_s);
}

http::LoopbackReply FakeAwsCloud::metadata(const http::LoopbackRequest& req, const std::string& id) {
  std::string path = req.target.substr(0, req.target.find('?'));
  const std::string token(http::find_header(req.headers, "X-aws-ec2-metadata-token").value_or(""));
  const std::string ttl(http::find_header(req.headers, "X-aws-ec2-metadata-token-ttl-seconds").value_or(""));
  return reply_of(ec2_.metadata(req.method, path, token, ttl, id));
}

fake_cloud::Route FakeAwsCloud::route(const http::LoopbackRequest& req) {
  auto target = http::find_header(req.headers, "X-Amz-Target");
  const bool pricing = target.has_value();
  std::string action;
  Fields params;
  if (pricing) {
    if (!target->starts_with(kPricingPrefix))
      return fake_cloud::Route::reply(reply_of(json_error(400, "UnknownOperationException", "unknown target " + std::string(*target))));
    action = std::string(target->substr(kPricingPrefix.size()));
  } else {
    auto parsed = query_params(req);
    if (!parsed) return fake_cloud::Route::reply(reply_of(ec2_error(400, "MalformedQueryString", parsed.error().detail)));
    params = std::move(*parsed);
    action = param(params, "Action").value_or("");
  }
  const std::string region = pricing ? std::string(kPricingRegion) : opts_.ec2.region;
  AuthRefusal refusal = verify_sigv4(req, opts_.credentials, region, pricing ? "pricing" : "ec2", server_.clock().now_s());
  if (refusal.status)
    return fake_cloud::Route::refuse(reply_of(pricing ? json_error(refusal.status, refusal.code, refusal.message)
                                                      : ec2_error(refusal.status, refusal.code, refusal.message)));
  return fake_cloud::Route::to(action, [this, action, params = std::move(params), body = req.body, pricing] {
    return reply_of(dispatch(action, params, body, pricing));
  });
}

FakeAnswer FakeAwsCloud::dispatch(const std::string& action, const Fields& params, const std::string& body, bool pricing) {
  if (pricing) {
    if (action != "GetProducts") return json_error(400, "UnknownOperationException", "unsupported operation " + action);
    return get_products(body, opts_.ec2.region, opts_.ec2.page_size);
  }
  if (action.empty()) return ec2_error(400, "MissingAction", "The request must contain the parameter Action");
  if (param(params, "Version") != std::string(kEc2ApiVersion))
    return ec2_error(400, "InvalidParameterValue", "Version must be " + std::string(kEc2ApiVersion));
  if (action == "DescribeInstanceTypes") return describe_instance_types(params, opts_.ec2.page_size);
  if (action == "DescribeSpotPriceHistory")
    return describe_spot_price_history(params, opts_.ec2.region, server_.clock().now_s(), opts_.ec2.page_size);
  return ec2_.handle(action, params);
}

http::LoopbackReply FakeAwsCloud::fault_answer(int status, const std::string& action) const {
  const bool pricing = action == "GetProducts";
  switch (status) {
    case 429:
      return reply_of(pricing ? json_error(429, "ThrottlingException", "Rate exceeded")
                              : ec2_error(429, "RequestLimitExceeded", "Request limit exceeded."));
    case 503:
      return reply_of(pricing ? json_error(503, "ServiceUnavailableException", "Service is unavailable")
                              : ec2_error(503, "RequestLimitExceeded", "Request limit exceeded."));
    default:
      return reply_of(pricing ? json_error(500, "InternalErrorException", "internal error")
                              : ec2_error(500, "InternalError", "An internal error has occurred"));
  }
}

}  // namespace tsum::providers::aws::fake
