#include "providers/aws/fake/fake_cloud.h"

#include "providers/aws/fake/fake_auth.h"
#include "providers/aws/ec2_xml.h"
#include "providers/aws/fake/fake_catalog.h"

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

FakeCloud::FakeCloud(FakeCloudOptions opts)
    : opts_(std::move(opts)),
      clock_(opts_.clock ? *opts_.clock : system_clock_),
      ec2_(opts_.ec2, clock_),
      server_([this](const http::LoopbackRequest& req) {
        auto reply = handle(req);
        sync_guests();
        return reply;
      }) {
  if (!opts_.guest.root.empty()) guest_.emplace(opts_.guest);
}

FakeCloud::~FakeCloud() { stop(); }

Status FakeCloud::guest_shutdown(std::string_view id) {
  Status s = ec2_.guest_shutdown(id);
  sync_guests();
  return s;
}

void FakeCloud::sync_guests() {
  if (!guest_) return;
  std::vector<fake_guest::LiveInstance> up;
  for (auto& i : ec2_.instances())
    if (i.state == "pending" || i.state == "running") up.push_back({i.id, std::move(i.user_data)});
  guest_->sync(up);
}

Result<std::uint16_t> FakeCloud::start() { return server_.start(opts_.listen); }

void FakeCloud::stop() { server_.stop(); }

int FakeCloud::requests(std::string_view action) const {
  std::lock_guard lock(mu_);
  auto it = requests_.find(action);
  return it == requests_.end() ? 0 : it->second;
}

int FakeCloud::rejected() const {
  std::lock_guard lock(mu_);
  return rejected_;
}

http::LoopbackReply FakeCloud::handle(const http::LoopbackRequest& req) {
  auto target = http::find_header(req.headers, "X-Amz-Target");
  const bool pricing = target.has_value();
  std::string action;
  Fields params;
  if (pricing) {
    if (!target->starts_with(kPricingPrefix))
      return reply_of(json_error(400, "UnknownOperationException", "unknown target " + std::string(*target)));
    action = std::string(target->substr(kPricingPrefix.size()));
  } else {
    auto parsed = query_params(req);
    if (!parsed) return reply_of(ec2_error(400, "MalformedQueryString", parsed.error().detail));
    params = std::move(*parsed);
    action = param(params, "Action").value_or("");
  }
  const std::string region = pricing ? std::string(kPricingRegion) : opts_.ec2.region;
  AuthRefusal refusal = verify_sigv4(req, opts_.credentials, region, pricing ? "pricing" : "ec2", clock_.now_s());
  if (refusal.status) {
    std::lock_guard lock(mu_);
    ++rejected_;
    return reply_of(pricing ? json_error(refusal.status, refusal.code, refusal.message)
                            : ec2_error(refusal.status, refusal.code, refusal.message));
  }
  {
    std::lock_guard lock(mu_);
    ++requests_[action];
  }
  auto fault = faults_.take(action);
  if (fault && *fault != FaultKind::lost) return fault_reply(*fault, pricing);
  http::LoopbackReply reply = reply_of(dispatch(action, params, req));
  reply.drop = fault == FaultKind::lost;  // done, but the answer never arrives
  return reply;
}

FakeAnswer FakeCloud::dispatch(const std::string& action, const Fields& params, const http::LoopbackRequest& req) {
  if (http::find_header(req.headers, "X-Amz-Target")) {
    if (action != "GetProducts") return json_error(400, "UnknownOperationException", "unsupported operation " + action);
    return get_products(req.body, opts_.ec2.region, opts_.ec2.page_size);
  }
  if (action.empty()) return ec2_error(400, "MissingAction", "The request must contain the parameter Action");
  if (param(params, "Version") != std::string(kEc2ApiVersion))
    return ec2_error(400, "InvalidParameterValue", "Version must be " + std::string(kEc2ApiVersion));
  if (action == "DescribeInstanceTypes") return describe_instance_types(params, opts_.ec2.page_size);
  if (action == "DescribeSpotPriceHistory")
    return describe_spot_price_history(params, opts_.ec2.region, clock_.now_s(), opts_.ec2.page_size);
  return ec2_.handle(action, params);
}

http::LoopbackReply FakeCloud::fault_reply(FaultKind kind, bool pricing) {
  switch (kind) {
    case FaultKind::throttle_429: {
      auto r = reply_of(pricing ? json_error(429, "ThrottlingException", "Rate exceeded")
                                : ec2_error(429, "RequestLimitExceeded", "Request limit exceeded."));
      r.headers.emplace_back("Retry-After", std::to_string(opts_.retry_after_s));
      return r;
    }
    case FaultKind::unavailable_503:
      return reply_of(pricing ? json_error(503, "ServiceUnavailableException", "Service is unavailable")
                              : ec2_error(503, "RequestLimitExceeded", "Request limit exceeded."));
    case FaultKind::internal_500:
      return reply_of(pricing ? json_error(500, "InternalErrorException", "internal error")
                              : ec2_error(500, "InternalError", "An internal error has occurred"));
    case FaultKind::timeout:
    case FaultKind::lost:
      break;
  }
  return {.delay = opts_.hang, .drop = true};  // timeout: hold the connection, then close it unanswered
}

}  // namespace tsum::providers::aws::fake
