#include "tests/fakes/aws/fake_aws_cloud.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "providers/aws/ec2_xml.h"
#include "tests/fakes/aws/fake_auth.h"
#include "tests/fakes/aws/fake_catalog.h"
#include "tests/fakes/cloud/request.h"

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

namespace {

FakeAnswer sts_error(int status, std::string_view code, std::string_view message) {
  return {status, "<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><Error><Type>Sender</Type>" +
                      el("Code", code) + el("Message", message) + "</Error><RequestId>fake</RequestId></ErrorResponse>"};
}

FakeAnswer sts_ok(std::string_view action, std::string_view inner) {
  const std::string a(action);
  return {200, "<" + a + "Response xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><" + a + "Result>" + std::string(inner) +
                   "</" + a + "Result><ResponseMetadata><RequestId>fake</RequestId></ResponseMetadata></" + a + "Response>"};
}

}  // namespace

std::optional<Credentials> FakeAwsCloud::signer(const std::string& access_key_id) {
  if (access_key_id == opts_.credentials.access_key_id) return opts_.credentials;
  std::lock_guard lock(issued_mu_);
  auto it = issued_.find(access_key_id);
  if (it == issued_.end() || it->second.expires_s <= server_.clock().now_s()) return std::nullopt;
  return it->second.credentials;
}

FakeAnswer FakeAwsCloud::sts(const std::string& action, const Fields& params, const std::string& caller) {
  if (param(params, "Version") != std::string("2011-06-15"))
    return sts_error(400, "InvalidParameterValue", "Version must be 2011-06-15");
  if (action == "GetCallerIdentity") {
    std::string arn = "arn:aws:iam::" + std::string(kOwnerId) + ":user/tsum-fake";
    {
      std::lock_guard lock(issued_mu_);
      if (auto it = issued_.find(caller); it != issued_.end()) arn = it->second.arn;
    }
    return sts_ok(action, el("Arn", arn) + el("UserId", "AIDAFAKE") + el("Account", kOwnerId));
  }
  if (action != "AssumeRole" && action != "AssumeRoleWithWebIdentity")
    return sts_error(400, "InvalidAction", "Could not find operation " + action);
  const auto role = param(params, "RoleArn").value_or(""), session = param(params, "RoleSessionName").value_or("");
  if (!role.starts_with("arn:aws:iam::") || role.find(":role/") == std::string::npos)
    return sts_error(400, "ValidationError", "RoleArn must be an IAM role's ARN");
  if (session.empty()) return sts_error(400, "ValidationError", "RoleSessionName is required");
  if (action == "AssumeRoleWithWebIdentity" && param(params, "WebIdentityToken").value_or("").empty())
    return sts_error(400, "InvalidIdentityToken", "no token");
  int duration = 3600;
  if (auto d = param(params, "DurationSeconds")) duration = std::atoi(d->c_str());
  if (duration < 900 || duration > 43200) return sts_error(400, "ValidationError", "DurationSeconds must be 900 to 43200");
  const Issued i = issue("arn:aws:sts::" + std::string(kOwnerId) + ":assumed-role/" + role.substr(role.find(":role/") + 6) + "/" + session,
                         duration);
  return sts_ok(action, "<Credentials>" + el("AccessKeyId", i.credentials.access_key_id) +
                            el("SecretAccessKey", i.credentials.secret_access_key) +
                            el("SessionToken", i.credentials.session_token) + el("Expiration", iso8601(i.expires_s)) +
                            "</Credentials><AssumedRoleUser>" + el("Arn", i.arn) + el("AssumedRoleId", "AROAFAKE:" + session) +
                            "</AssumedRoleUser>");
}

FakeAwsCloud::Issued FakeAwsCloud::issue(const std::string& arn, int duration_s) {
  std::lock_guard lock(issued_mu_);
  char id[32];
  std::snprintf(id, sizeof id, "ASIAFAKE%08d", ++issued_count_);
  Issued i{{id, "fake-secret-" + std::to_string(issued_count_), "fake-session-token-" + std::to_string(issued_count_)},
           server_.clock().now_s() + duration_s, arn};
  issued_[id] = i;
  return i;
}

FakeAnswer FakeAwsCloud::sso(const http::LoopbackRequest& req) {
  auto unauthorized = [] {
    return FakeAnswer{401, R"({"message":"Session token not found or invalid"})", "application/json",
                      {{"x-amzn-ErrorType", "UnauthorizedException"}}};
  };
  const auto token = http::find_header(req.headers, "x-amz-sso_bearer_token");
  if (req.method != "GET" || opts_.sso_access_token.empty() || !token || *token != opts_.sso_access_token) return unauthorized();
  auto target = fake_cloud::parse_target(req);
  const std::string account = target && target->query.contains("account_id") ? target->query.at("account_id") : "";
  const std::string role = target && target->query.contains("role_name") ? target->query.at("role_name") : "";
  if (account.empty() || role.empty())
    return {400, R"({"message":"account_id and role_name are required"})", "application/json", {{"x-amzn-ErrorType", "InvalidRequestException"}}};
  const Issued i = issue("arn:aws:sts::" + account + ":assumed-role/AWSReservedSSO_" + role + "_0123456789abcdef/me", 3600);
  const nlohmann::json answer = {{"roleCredentials", {{"accessKeyId", i.credentials.access_key_id},
                                                      {"secretAccessKey", i.credentials.secret_access_key},
                                                      {"sessionToken", i.credentials.session_token},
                                                      {"expiration", static_cast<long long>(i.expires_s * 1000)}}}};
  return {200, answer.dump(), "application/json"};
}

FakeAnswer FakeAwsCloud::host_imds(const http::LoopbackRequest& req) {
  const std::string path = req.target.substr(0, req.target.find('?'));
  if (path == "/latest/api/token") {
    if (req.method != "PUT" || !http::find_header(req.headers, "X-aws-ec2-metadata-token-ttl-seconds"))
      return {400, "", "text/plain"};
    std::lock_guard lock(issued_mu_);
    imds_tokens_.push_back("imds-token-" + std::to_string(imds_tokens_.size() + 1));
    return {200, imds_tokens_.back(), "text/plain"};
  }
  const std::string token(http::find_header(req.headers, "X-aws-ec2-metadata-token").value_or(""));
  {
    std::lock_guard lock(issued_mu_);
    if (std::find(imds_tokens_.begin(), imds_tokens_.end(), token) == imds_tokens_.end()) return {401, "", "text/plain"};
  }
  const std::string prefix = "/latest/meta-data/iam/security-credentials/";
  if (!path.starts_with(prefix) || opts_.instance_role.empty()) return {404, "", "text/plain"};
  if (path == prefix) return {200, opts_.instance_role, "text/plain"};
  if (path.substr(prefix.size()) != opts_.instance_role) return {404, "", "text/plain"};
  const Issued i = issue("arn:aws:sts::" + std::string(kOwnerId) + ":assumed-role/" + opts_.instance_role + "/i-0fakehost", 21600);
  const nlohmann::json answer = {{"Code", "Success"}, {"LastUpdated", iso8601(server_.clock().now_s())}, {"Type", "AWS-HMAC"},
                                 {"AccessKeyId", i.credentials.access_key_id}, {"SecretAccessKey", i.credentials.secret_access_key},
                                 {"Token", i.credentials.session_token}, {"Expiration", iso8601(i.expires_s)}};
  return {200, answer.dump(), "text/plain"};
}

FakeAnswer FakeAwsCloud::quotas(const std::string& action, const std::string& body) const {
  if (action != "GetServiceQuota") return json_error(400, "InvalidAction", "unsupported operation " + action);
  auto doc = nlohmann::json::parse(body, nullptr, false);
  const bool known = doc.is_object() && doc.value("ServiceCode", "") == "ec2" && doc.value("QuotaCode", "") == "L-1216C47A";
  if (!known) return json_error(400, "NoSuchResourceException", "The request failed because the specified quota does not exist.");
  const nlohmann::json answer = {{"Quota", {{"ServiceCode", "ec2"}, {"QuotaCode", "L-1216C47A"}, {"Value", opts_.standard_vcpu_quota},
                                            {"QuotaName", "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances"},
                                            {"Unit", "None"}, {"Adjustable", true}, {"GlobalQuota", false}}}};
  return {200, answer.dump(), "application/x-amz-json-1.1"};
}

FakeAnswer FakeAwsCloud::ssm(const std::string& action, const std::string& region, const std::string& body) const {
  if (action != "GetParameter") return json_error(400, "InvalidAction", "unsupported operation " + action);
  auto doc = nlohmann::json::parse(body, nullptr, false);
  const std::string name = doc.is_object() && doc.contains("Name") && doc["Name"].is_string() ? doc["Name"].get<std::string>() : "";
  const std::string prefix = "/aws/service/debian/release/bookworm/latest/";
  if (!name.starts_with(prefix) || (name.substr(prefix.size()) != "amd64" && name.substr(prefix.size()) != "arm64"))
    return json_error(400, "ParameterNotFound", "Parameter " + name + " not found.");
  char ami[64];
  std::snprintf(ami, sizeof ami, "ami-0deb12%s%08zx", name.ends_with("arm64") ? "a" : "x", std::hash<std::string>{}(region) & 0xffffffffu);
  nlohmann::json answer = {{"Parameter", {{"Name", name}, {"Type", "String"}, {"Value", ami}, {"Version", 1}, {"DataType", "aws:ec2:image"}}}};
  return {200, answer.dump(), "application/x-amz-json-1.1"};
}

fake_cloud::Route FakeAwsCloud::route(const http::LoopbackRequest& req) {
  const std::string path = req.target.substr(0, req.target.find('?'));
  if (path == "/federation/credentials") return fake_cloud::Route::to("GetRoleCredentials", [this, req] { return reply_of(sso(req)); });
  if (path.starts_with("/latest/")) return fake_cloud::Route::reply(reply_of(host_imds(req)));
  auto target = http::find_header(req.headers, "X-Amz-Target");
  const bool quotas_call = target && target->starts_with("ServiceQuotasV20190624.");
  const bool ssm_call = (target && target->starts_with("AmazonSSM.")) || quotas_call;  // JSON 1.1 services alike
  const bool pricing = target.has_value() && !ssm_call;
  std::string action;
  Fields params;
  if (ssm_call) {
    action = std::string(target->substr(target->find('.') + 1));
  } else if (pricing) {
    if (!target->starts_with(kPricingPrefix))
      return fake_cloud::Route::reply(reply_of(json_error(400, "UnknownOperationException", "unknown target " + std::string(*target))));
    action = std::string(target->substr(kPricingPrefix.size()));
  } else {
    auto parsed = query_params(req);
    if (!parsed) return fake_cloud::Route::reply(reply_of(ec2_error(400, "MalformedQueryString", parsed.error().detail)));
    params = std::move(*parsed);
    action = param(params, "Action").value_or("");
  }
  // EC2's region is the one the signature is scoped to, where this fake serves it; STS's and SSM's any.
  std::optional<AuthorizationHeader> auth;
  if (auto h = http::find_header(req.headers, "Authorization"))
    if (auto parsed = parse_authorization(*h)) auth = *parsed;
  const bool sts_call = !pricing && !ssm_call && (auth ? auth->service == "sts" : action == "AssumeRoleWithWebIdentity");
  const char* service = sts_call ? "sts" : quotas_call ? "servicequotas" : ssm_call ? "ssm" : pricing ? "pricing" : "ec2";
  std::string region = pricing ? std::string(kPricingRegion) : regions_.front();
  if (auth && !pricing && (ec2_.count(auth->region) || sts_call || ssm_call)) region = auth->region;
  auto refuse = [&](int status, std::string_view code, std::string_view message) {
    return fake_cloud::Route::refuse(reply_of(sts_call ? sts_error(status, code, message)
                                              : pricing || ssm_call ? json_error(status, code, message)
                                                                    : ec2_error(status, code, message)));
  };
  if (!(sts_call && action == "AssumeRoleWithWebIdentity")) {
    auto creds = signer(auth ? auth->access_key_id : opts_.credentials.access_key_id);
    if (!creds) return refuse(403, sts_call ? "InvalidClientTokenId" : "AuthFailure", "The security token included in the request is invalid.");
    AuthRefusal refusal = verify_sigv4(req, *creds, region, service, server_.clock().now_s());
    if (refusal.status) return refuse(refusal.status, refusal.code, refusal.message);
  }
  const std::string caller = auth ? auth->access_key_id : "";
  if (sts_call)
    return fake_cloud::Route::to(action, [this, action, params = std::move(params), caller] {
      return reply_of(sts(action, params, caller));
    });
  if (quotas_call)
    return fake_cloud::Route::to(action, [this, action, body = req.body] { return reply_of(quotas(action, body)); });
  if (ssm_call)
    return fake_cloud::Route::to(action, [this, action, region, body = req.body] { return reply_of(ssm(action, region, body)); });
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
