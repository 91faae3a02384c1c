#include "providers/gce/fake/fake_gce_cloud.h"

#include <random>

#include "providers/aws/codec.h"
#include "providers/gce/gce_catalog.h"
#include "providers/gce/jwt.h"

namespace tsum::providers::gce::fake {

namespace {

constexpr double kMaxSkewS = 300;
constexpr double kMaxJwtLifetimeS = 3600;

http::LoopbackReply reply_of(const JsonAnswer& a) {
  return {.status = a.status, .headers = {{"Content-Type", "application/json; charset=UTF-8"}}, .body = a.body.dump()};
}

http::LoopbackReply oauth_error(const std::string& error, const std::string& description) {
  return reply_of({400, {{"error", error}, {"error_description", description}}});
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
  return "ya29.fake-" + std::string(buf);
}

// The claims checks Google's token endpoint makes; empty when they pass.
std::string claims_refusal(const nlohmann::json& claims, const std::string& email, const std::string& audience, double now) {
  if (claims.value("iss", "") != email) return "Invalid JWT: iss is not the service account";
  if (claims.value("aud", "") != audience) return "Invalid JWT: aud is not " + audience;
  if (claims.value("scope", "").empty()) return "Invalid JWT: no scope";
  if (!claims.value("iat", nlohmann::json()).is_number() || !claims.value("exp", nlohmann::json()).is_number())
    return "Invalid JWT: iat and exp must be numbers";
  double iat = claims["iat"].get<double>(), exp = claims["exp"].get<double>();
  if (iat > now + kMaxSkewS || exp <= now || exp - iat > kMaxJwtLifetimeS)
    return "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.";
  return {};
}

}  // namespace

FakeGceCloud::FakeGceCloud(FakeGceCloudOptions opts)
    : opts_(std::move(opts)),
      clock_(opts_.clock ? *opts_.clock : system_clock_),
      compute_(opts_.compute, clock_),
      server_([this](const http::LoopbackRequest& req) {
        auto reply = handle(req);
        sync_guests();
        return reply;
      }) {
  if (!opts_.guest.root.empty()) guest_.emplace(opts_.guest);
}

FakeGceCloud::~FakeGceCloud() { stop(); }

Status FakeGceCloud::guest_shutdown(const std::string& zone, const std::string& name) {
  Status s = compute_.guest_shutdown(zone, name);
  sync_guests();
  return s;
}

void FakeGceCloud::sync_guests() {
  if (!guest_) return;
  std::vector<fake_guest::LiveInstance> up;
  for (auto& i : compute_.instances())
    if (i.status == "PROVISIONING" || i.status == "STAGING" || i.status == "RUNNING")
      up.push_back({i.id, i.metadata["user-data"]});
  guest_->sync(up);
}

Result<std::uint16_t> FakeGceCloud::start() {
  if (opts_.public_key_pem.empty()) return make_error(Code::invalid_argument, "fake gce: no service account public key");
  return server_.start(opts_.listen);
}

void FakeGceCloud::stop() { server_.stop(); }

int FakeGceCloud::requests(std::string_view method) const { return book_.requests(method); }

int FakeGceCloud::rejected() const { return book_.rejected(); }

int FakeGceCloud::tokens_issued() const { return book_.issued(); }

void FakeGceCloud::revoke_tokens(bool refuse_all) {
  book_.revoke_all();
  refuse_all_ = refuse_all;
}

http::LoopbackReply FakeGceCloud::fault_reply(FaultKind kind) const {
  switch (kind) {
    case FaultKind::throttle_429: {
      auto r = reply_of(google_error(429, "rateLimitExceeded", "Rate Limit Exceeded"));
      r.headers.emplace_back("Retry-After", std::to_string(opts_.retry_after_s));
      return r;
    }
    case FaultKind::unavailable_503:
      return reply_of(google_error(503, "backendError", "The service is currently unavailable."));
    case FaultKind::internal_500:
      return reply_of(google_error(500, "backendError", "Internal error. Please try again."));
    case FaultKind::timeout:
    case FaultKind::lost:
      break;
  }
  return {.delay = opts_.hang, .drop = true};  // timeout: hold the connection, then close it unanswered
}

std::string FakeGceCloud::refuse_bearer(const http::LoopbackRequest& req) {
  auto token = CallBook::bearer(req);
  std::string refusal;
  if (!token) refusal = "Request is missing required authentication credential. Expected OAuth 2 access token.";
  else if (refuse_all_ || !book_.valid(*token, clock_.now_s()))
    refusal = "Request had invalid authentication credentials (got '" + *token + "'). Expected OAuth 2 access token.";
  if (!refusal.empty()) book_.reject();
  return refusal;
}

http::LoopbackReply FakeGceCloud::token(const http::LoopbackRequest& req) {
  auto form = aws::parse_query(req.body, /*plus_is_space=*/true);
  if (req.method != "POST" || !form) return oauth_error("invalid_request", "POST a form to the token endpoint");
  auto fields = to_map(*form);
  auto refuse = [&](const std::string& error, const std::string& why) {
    book_.reject();
    return oauth_error(error, why + " (assertion '" + fields["assertion"] + "')");
  };
  if (fields["grant_type"] != "urn:ietf:params:oauth:grant-type:jwt-bearer")
    return refuse("unsupported_grant_type", "Invalid grant_type: " + fields["grant_type"]);
  auto jwt = verify_jwt(fields["assertion"], opts_.public_key_pem);
  if (!jwt) return refuse("invalid_grant", "Invalid JWT Signature: " + jwt.error().detail);
  const double now = clock_.now_s();
  if (auto why = claims_refusal(jwt->claims, opts_.client_email, token_url(), now); !why.empty())
    return refuse("invalid_grant", why);
  book_.count("token");
  auto injected = faults_.take("token");
  if (injected && *injected != FaultKind::lost) return fault_reply(*injected);
  const std::string token = random_token();
  book_.issue(token, now + opts_.token_lifetime_s);
  auto reply = reply_of({200, {{"access_token", token}, {"expires_in", static_cast<long>(opts_.token_lifetime_s)},
                               {"token_type", "Bearer"}}});
  reply.drop = injected == FaultKind::lost;  // issued, but the answer never arrives
  return reply;
}

http::LoopbackReply FakeGceCloud::handle(const http::LoopbackRequest& req) {
  auto q = req.target.find('?');
  const std::string path = req.target.substr(0, q);
  auto query = aws::parse_query(q == std::string::npos ? std::string_view() : std::string_view(req.target).substr(q + 1),
                               /*plus_is_space=*/true);
  if (!query) return reply_of(google_error(400, "badRequest", "malformed query: " + query.error().detail));
  if (path == "/token") return token(req);
  if (auto refusal = refuse_bearer(req); !refusal.empty()) {
    auto r = reply_of(google_error(401, "authError", refusal));
    r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"https://accounts.google.com/\", error=\"invalid_token\"");
    return r;
  }
  std::string method;
  ComputeCall call;
  const std::string skus = "/v1/services/" + std::string(kComputeServiceId) + "/skus";
  if (path.starts_with("/compute/v1/")) {
    call = {req.method, split_path(std::string_view(path).substr(12)), to_map(*query), req.body};
    method = compute_method(call);
  } else if (path == skus && req.method == "GET") {
    method = "skus.list";
  }
  if (method.empty()) return reply_of(google_error(404, "notFound", "No such method: " + req.method + " " + path));
  book_.count(method);
  auto injected = faults_.take(method);
  if (injected && *injected != FaultKind::lost) return fault_reply(*injected);
  auto reply = reply_of(method == "skus.list" ? list_skus(to_map(*query), opts_.compute.page_size) : compute_.handle(call));
  reply.drop = injected == FaultKind::lost;  // carried out, but the answer never arrives
  return reply;
}

}  // namespace tsum::providers::gce::fake
