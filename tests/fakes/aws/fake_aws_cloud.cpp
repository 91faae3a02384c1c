#include "tests/fakes/aws/fake_aws_cloud.h"

#include <algorithm>

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

FakeAwsCloud::FakeAwsCloud(FakeAwsCloudOptions opts) : opts_(std::move(opts)), server_(opts_.server, *this) {
  regions_.push_back(opts_.ec2.region);
  regions_.insert(regions_.end(), opts_.more_regions.begin(), opts_.more_regions.end());
  for (std::size_t i = 0; i < regions_.size(); ++i) {
    FakeEc2Options o = opts_.ec2;
    o.region = regions_[i];
    o.first_id = 1 + i * 0x1000000UL;
    ec2_[regions_[i]] = std::make_unique<FakeEc2>(o, fake_cloud::clock_or_system(opts_.server.clock));
  }
}

std::vector<FakeInstance> FakeAwsCloud::instances() const {
  std::vector<FakeInstance> out;
  for (const auto& r : regions_) {
    auto in = ec2_.at(r)->instances();
    out.insert(out.end(), in.begin(), in.end());
  }
  return out;
}

int FakeAwsCloud::created() const {
  int n = 0;
  for (const auto& [_, e] : ec2_) n += e->created();
  return n;
}

FakeEc2* FakeAwsCloud::holding(const std::string& id) const {
  for (const auto& [_, e] : ec2_)
    for (const auto& i : e->instances())
      if (i.id == id) return e.get();
  return nullptr;
}

Status FakeAwsCloud::guest_shutdown(std::string_view id) {
  FakeEc2* e = holding(std::string(id));
  Status s = e ? e->guest_shutdown(id) : Status(make_error(Code::not_found, "no instance " + std::string(id)));
  server_.sync_guests();
  return s;
}

std::vector<fake_guest::LiveInstance> FakeAwsCloud::live_guests() const {
  std::vector<fake_guest::LiveInstance> up;
  for (auto& i : instances())
    if (i.state == "pending" || i.state == "running") up.push_back({i.id, std::move(i.user_data)});
  return up;
}

Status FakeAwsCloud::interrupt(const std::string& id, std::optional<double> notice_s) {
  FakeEc2* e = holding(id);
  return e ? e->interrupt(id, notice_s) : Status(make_error(Code::not_found, "no instance " + id + " is up"));
}

Status FakeAwsCloud::set_spot_capacity(const std::string& region, std::optional<int> left) {
  auto it = ec2_.find(region);
  if (it == ec2_.end()) return make_error(Code::not_found, "this fake serves no region " + region);
  it->second->set_spot_capacity(left);
  return {};
}

http::LoopbackReply FakeAwsCloud::metadata(const http::LoopbackRequest& req, const std::string& id) {
  std::string path = req.target.substr(0, req.target.find('?'));
  const std::string token(http::find_header(req.headers, "X-aws-ec2-metadata-token").value_or(""));
  const std::string ttl(http::find_header(req.headers, "X-aws-ec2-metadata-token-ttl-seconds").value_or(""));
  FakeEc2* e = holding(id);
  return reply_of((e ? *e : *ec2_.at(regions_.front())).metadata(req.method, path, token, ttl, id));
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
  // EC2's region is the one the signature is scoped to, where this fake serves it.
  std::string region = pricing ? std::string(kPricingRegion) : regions_.front();
  if (auto h = http::find_header(req.headers, "Authorization"); h && !pricing)
    if (auto auth = parse_authorization(*h); auth && ec2_.count(auth->region)) region = auth->region;
  AuthRefusal refusal = verify_sigv4(req, opts_.credentials, region, pricing ? "pricing" : "ec2", server_.clock().now_s());
  if (refusal.status)
    return fake_cloud::Route::refuse(reply_of(pricing ? json_error(refusal.status, refusal.code, refusal.message)
                                                      : ec2_error(refusal.status, refusal.code, refusal.message)));
  return fake_cloud::Route::to(action, [this, region, action, params = std::move(params), body = req.body, pricing] {
    return reply_of(dispatch(region, action, params, body, pricing));
  });
}

FakeAnswer FakeAwsCloud::dispatch(const std::string& region, const std::string& action, const Fields& params,
                                  const std::string& body, bool pricing) {
  if (pricing) {
    if (action != "GetProducts") return json_error(400, "UnknownOperationException", "unsupported operation " + action);
    return get_products(body, regions_, opts_.ec2.page_size);
  }
  if (action.empty()) return ec2_error(400, "MissingAction", "The request must contain the parameter Action");
  if (param(params, "Version") != std::string(kEc2ApiVersion))
    return ec2_error(400, "InvalidParameterValue", "Version must be " + std::string(kEc2ApiVersion));
  if (action == "DescribeInstanceTypes") return describe_instance_types(params, opts_.ec2.page_size);
  if (action == "DescribeSpotPriceHistory") {
    const auto index = std::find(regions_.begin(), regions_.end(), region) - regions_.begin();
    return describe_spot_price_history(params, region, 1 + 0.15 * static_cast<double>(index), server_.clock().now_s(),
                                       opts_.ec2.page_size);
  }
  return ec2_.at(region)->handle(action, params);
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
