#include "providers/azure/fake/fake_azure_cloud.h"

#include <random>

#include "providers/aws/codec.h"
#include "providers/azure/azure_api.h"

namespace tsum::providers::azure::fake {

namespace {

http::LoopbackReply reply_of(const ArmAnswer& a) {
  http::LoopbackReply r{.status = a.status, .headers = {{"Content-Type", "application/json; charset=utf-8"}}, .body = a.body.dump()};
  r.headers.insert(r.headers.end(), a.headers.begin(), a.headers.end());
  return r;
}

http::LoopbackReply oauth_error(int status, const std::string& error, const std::string& description) {
  return reply_of({status, {{"error", error}, {"error_description", description}, {"error_codes", {7000215}}}, {}});
}

std::map<std::string, std::string> to_map(const aws::Fields& fields) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : fields) out.emplace(k, v);
  return out;
}

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> out;
  while (!path.empty()) {
    auto slash = path.find('/');
    if (slash != 0) out.emplace_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

std::string random_token() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(rng()), static_cast<unsigned long long>(rng()));
  return "eyJ0eXAiOiJKV1QifQ.fake-" + std::string(buf);
}

}  // namespace

FakeAzureCloud::FakeAzureCloud(FakeAzureCloudOptions opts)
    : opts_(std::move(opts)),
      clock_(opts_.clock ? *opts_.clock : system_clock_),
      arm_(opts_.arm, clock_),
      server_([this](const http::LoopbackRequest& req) {
        auto reply = handle(req);
        sync_guests();
        return reply;
      }) {
  if (!opts_.guest.root.empty()) guest_.emplace(opts_.guest);
}

FakeAzureCloud::~FakeAzureCloud() { stop(); }

Status FakeAzureCloud::guest_shutdown(const std::string& group) {
  Status s = arm_.guest_shutdown(group);
  sync_guests();
  return s;
}

void FakeAzureCloud::sync_guests() {
  if (!guest_) return;
  std::vector<fake_guest::LiveInstance> up;
  for (auto& v : arm_.vms())
    if ((v.provisioning_state == "Creating" || v.provisioning_state == "Succeeded") && v.power_state != "stopped")
      up.push_back({v.group + "." + v.name, std::move(v.custom_data)});
  guest_->sync(up);
}

Result<std::uint16_t> FakeAzureCloud::start() {
  if (opts_.client_secret.empty()) return make_error(Code::invalid_argument, "fake azure: no client secret");
  auto port = server_.start(opts_.listen);
  if (port) arm_.set_base_url(server_.base_url());
  return port;
}

void FakeAzureCloud::stop() { server_.stop(); }

int FakeAzureCloud::requests(std::string_view method) const { return book_.requests(method); }

int FakeAzureCloud::rejected() const { return book_.rejected(); }

int FakeAzureCloud::tokens_issued() const { return book_.issued(); }

void FakeAzureCloud::revoke_tokens() {
  book_.revoke_all();
}

http::LoopbackReply FakeAzureCloud::fault_reply(FaultKind kind) const {
  switch (kind) {
    case FaultKind::throttle_429: {
      auto r = reply_of(arm_error(429, "TooManyRequests", "The request is being throttled as the limit has been reached."));
      r.headers.emplace_back("Retry-After", std::to_string(opts_.retry_after_s));
      return r;
    }
    case FaultKind::unavailable_503:
      return reply_of(arm_error(503, "ServiceUnavailable", "The service is temporarily unavailable."));
    case FaultKind::internal_500:
      return reply_of(arm_error(500, "InternalServerError", "Encountered internal server error."));
    case FaultKind::timeout:
    case FaultKind::lost:
      break;
  }
  return {.delay = opts_.hang, .drop = true};  // timeout: hold the connection, then close it unanswered
}

std::string FakeAzureCloud::refuse_bearer(const http::LoopbackRequest& req) {
  auto token = CallBook::bearer(req);
  std::string refusal;
  if (!token) refusal = "The request did not have a subscription or a valid tenant level resource provider.";
  else if (!book_.valid(*token, clock_.now_s())) refusal = "The access token '" + *token + "' is invalid or expired.";
  if (!refusal.empty()) book_.reject();
  return refusal;
}

http::LoopbackReply FakeAzureCloud::token(const http::LoopbackRequest& req) {
  auto form = aws::parse_query(req.body, /*plus_is_space=*/true);
  if (req.method != "POST" || !form) return oauth_error(400, "invalid_request", "AADSTS900144: POST a form to the token endpoint.");
  auto fields = to_map(*form);
  auto refuse = [&](int status, const std::string& error, const std::string& why) {
    book_.reject();
    return oauth_error(status, error, why);
  };
  if (fields["grant_type"] != "client_credentials")
    return refuse(400, "unsupported_grant_type", "AADSTS70003: The app requested an unsupported grant type '" + fields["grant_type"] + "'.");
  if (fields["client_id"] != opts_.client_id)
    return refuse(400, "unauthorized_client", "AADSTS700016: Application with identifier '" + fields["client_id"] + "' was not found in the directory.");
  if (fields["client_secret"] != opts_.client_secret)
    return refuse(401, "invalid_client", "AADSTS7000215: Invalid client secret provided ('" + fields["client_secret"] + "').");
  if (fields["scope"] != kManagementScope)
    return refuse(400, "invalid_scope", "AADSTS1002012: The provided value for scope " + fields["scope"] + " is not valid.");
  book_.count("token");
  auto injected = faults_.take("token");
  if (injected && *injected != FaultKind::lost) return fault_reply(*injected);
  const std::string token = random_token();
  book_.issue(token, clock_.now_s() + opts_.token_lifetime_s);
  auto reply = reply_of({200, {{"token_type", "Bearer"}, {"expires_in", static_cast<long>(opts_.token_lifetime_s)},
                               {"ext_expires_in", static_cast<long>(opts_.token_lifetime_s)}, {"access_token", token}}, {}});
  reply.drop = injected == FaultKind::lost;  // issued, but the answer never arrives
  return reply;
}

http::LoopbackReply FakeAzureCloud::handle(const http::LoopbackRequest& req) {
  auto q = req.target.find('?');
  const std::string path = req.target.substr(0, q);
  auto query = aws::parse_query(q == std::string::npos ? std::string_view() : std::string_view(req.target).substr(q + 1),
                                /*plus_is_space=*/true);
  if (!query) return reply_of(arm_error(400, "InvalidQuery", "malformed query: " + query.error().detail));
  const std::string tenant = "/" + opts_.tenant_id;
  if (path == tenant + "/oauth2/v2.0/token") return token(req);
  if (path == tenant + "/v2.0/.well-known/openid-configuration" && req.method == "GET")
    return reply_of({200, {{"token_endpoint", base_url() + tenant + "/oauth2/v2.0/token"},
                           {"authorization_endpoint", base_url() + tenant + "/oauth2/v2.0/authorize"},
                           {"issuer", base_url() + tenant + "/v2.0"}, {"tenant_region_scope", "EU"}}, {}});
  std::string method;
  ArmAnswer answer;
  if (path == "/api/retail/prices" && req.method == "GET") {
    method = "prices.list";
  } else if (path.starts_with("/subscriptions/")) {
    if (auto refusal = refuse_bearer(req); !refusal.empty()) {
      auto r = reply_of(arm_error(401, "InvalidAuthenticationToken", refusal));
      r.headers.emplace_back("WWW-Authenticate", "Bearer authorization_uri=\"" + base_url() + tenant + "\", error=\"invalid_token\"");
      return r;
    }
    method = arm_method({req.method, split_path(path), {}, {}});
  }
  if (method.empty()) return reply_of(arm_error(404, "NotFound", "No route for " + req.method + " " + path));
  book_.count(method);
  auto injected = faults_.take(method);
  if (injected && *injected != FaultKind::lost) return fault_reply(*injected);
  auto params = to_map(*query);
  if (method == "prices.list") answer = list_retail_prices(params, opts_.retail, prices_url());
  else if (method == "resourceSkus.list") answer = list_resource_skus(params, opts_.sku_page_size, base_url(), opts_.arm.subscription);
  else answer = arm_.handle(method, {req.method, split_path(path), std::move(params), req.body});
  auto reply = reply_of(answer);
  reply.drop = injected == FaultKind::lost;  // carried out, but the answer never arrives
  return reply;
}

}  // namespace tsum::providers::azure::fake
