#include "providers/yandex/fake/fake_yandex_cloud.h"

#include <algorithm>
#include <ctime>
#include <random>

#include "common/json_util.h"
#include "providers/aws/codec.h"
#include "providers/yandex/fake/fake_yandex_billing.h"
#include "providers/yandex/ps256_jwt.h"

namespace tsum::providers::yandex::fake {

namespace {

constexpr double kMaxSkewS = 300;
constexpr double kMaxJwtLifetimeS = 3600;

http::LoopbackReply reply_of(const YcAnswer& a) {
  return {.status = a.status, .headers = {{"Content-Type", "application/json"}}, .body = a.body.dump()};
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
  return "t1.fake-" + std::string(buf);
}

std::string rfc3339(double epoch_s) {
  std::time_t t = static_cast<std::time_t>(epoch_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char frac[16];
  std::snprintf(frac, sizeof frac, ".%06dZ", static_cast<int>((epoch_s - static_cast<double>(t)) * 1e6));
  return std::string(buf) + frac;
}

// The checks Yandex's IAM makes on a JWT's header and claims; empty when they pass.
std::string jwt_refusal(const VerifiedJwt& jwt, const FakeYandexCloudOptions& o, const std::string& audience, double now) {
  if (jwt.header.value("kid", "") != o.key_id) return "JWT kid is not a key of this service account";
  if (jwt.claims.value("iss", "") != o.service_account_id) return "JWT iss is not the key's service account";
  const auto& aud = jwt.claims.value("aud", nlohmann::json());
  const bool aud_ok = (aud.is_string() && aud == audience) ||
                      (aud.is_array() && std::find(aud.begin(), aud.end(), nlohmann::json(audience)) != aud.end());
  if (!aud_ok) return "JWT aud is not " + audience;
  if (!jwt.claims.value("iat", nlohmann::json()).is_number() || !jwt.claims.value("exp", nlohmann::json()).is_number())
    return "JWT iat and exp must be numbers";
  const double iat = jwt.claims["iat"].get<double>(), exp = jwt.claims["exp"].get<double>();
  if (iat > now + kMaxSkewS || exp <= now || exp - iat > kMaxJwtLifetimeS) return "JWT expired or too long-lived (at most an hour)";
  return {};
}

}  // namespace

FakeYandexCloud::FakeYandexCloud(FakeYandexCloudOptions opts)
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

FakeYandexCloud::~FakeYandexCloud() { stop(); }

Status FakeYandexCloud::guest_shutdown(const std::string& id) {
  Status s = compute_.guest_shutdown(id);
  sync_guests();
  return s;
}

void FakeYandexCloud::sync_guests() {
  if (!guest_) return;
  std::vector<fake_guest::LiveInstance> up;
  for (auto& i : compute_.instances())
    if (i.status == "PROVISIONING" || i.status == "STARTING" || i.status == "RUNNING")
      up.push_back({i.id, std::move(i.user_data)});
  guest_->sync(up);
}

Result<std::uint16_t> FakeYandexCloud::start() {
  if (opts_.public_key_pem.empty()) return make_error(Code::invalid_argument, "fake yandex: no authorized key public key");
  return server_.start(opts_.listen);
}

void FakeYandexCloud::stop() { server_.stop(); }

int FakeYandexCloud::requests(std::string_view method) const { return book_.requests(method); }

int FakeYandexCloud::rejected() const { return book_.rejected(); }

int FakeYandexCloud::tokens_issued() const { return book_.issued(); }

void FakeYandexCloud::revoke_tokens() {
  book_.revoke_all();
}

http::LoopbackReply FakeYandexCloud::fault_reply(FaultKind kind) const {
  switch (kind) {
    case FaultKind::throttle_429: {
      auto r = reply_of(yc_error(429, "Too many requests"));
      r.headers.emplace_back("Retry-After", std::to_string(opts_.retry_after_s));
      return r;
    }
    case FaultKind::unavailable_503:
      return reply_of(yc_error(503, "Service is unavailable, try again later"));
    case FaultKind::internal_500:
      return reply_of(yc_error(500, "Internal error"));
    case FaultKind::timeout:
    case FaultKind::lost:
      break;
  }
  return {.delay = opts_.hang, .drop = true};  // timeout: hold the connection, then close it unanswered
}

std::string FakeYandexCloud::refuse_bearer(const http::LoopbackRequest& req) {
  auto token = CallBook::bearer(req);
  std::string refusal;
  if (!token) refusal = "The token is missing";
  else if (!book_.valid(*token, clock_.now_s())) refusal = "The token is invalid or expired: '" + *token + "'";
  if (!refusal.empty()) book_.reject();
  return refusal;
}

http::LoopbackReply FakeYandexCloud::token(const http::LoopbackRequest& req) {
  auto doc = parse_json_safely(req.body);
  if (req.method != "POST" || !doc || !doc->is_object() || !(*doc)["jwt"].is_string())
    return reply_of(yc_error(400, "POST {\"jwt\": ...} to the token endpoint"));
  const std::string jwt = (*doc)["jwt"].get<std::string>();
  auto refuse = [&](const std::string& why) {
    book_.reject();
    return reply_of(yc_error(401, why + " (jwt '" + jwt + "')"));
  };
  auto verified = verify_ps256_jwt(jwt, opts_.public_key_pem);
  if (!verified) return refuse("Invalid JWT: " + verified.error().detail);
  const double now = clock_.now_s();
  if (auto why = jwt_refusal(*verified, opts_, iam_url(), now); !why.empty()) return refuse(why);
  book_.count("iam.token");
  auto injected = faults_.take("iam.token");
  if (injected && *injected != FaultKind::lost) return fault_reply(*injected);
  const std::string token = random_token();
  book_.issue(token, now + opts_.token_lifetime_s);
  auto reply = reply_of({200, {{"iamToken", token}, {"expiresAt", rfc3339(now + opts_.token_lifetime_s)}}});
  reply.drop = injected == FaultKind::lost;  // issued, but the answer never arrives
  return reply;
}

http::LoopbackReply FakeYandexCloud::handle(const http::LoopbackRequest& req) {
  auto q = req.target.find('?');
  const std::string path = req.target.substr(0, q);
  auto query = aws::parse_query(q == std::string::npos ? std::string_view() : std::string_view(req.target).substr(q + 1),
                                /*plus_is_space=*/true);
  if (!query) return reply_of(yc_error(400, "malformed query: " + query.error().detail));
  if (path == "/iam/v1/tokens") return token(req);
  if (auto refusal = refuse_bearer(req); !refusal.empty()) return reply_of(yc_error(401, refusal));
  std::string method;
  ComputeCall call;
  const auto segments = split_path(path);
  if (path.starts_with("/compute/v1/")) {
    call = {req.method, split_path(std::string_view(path).substr(12)), to_map(*query), req.body};
    method = compute_method(call);
  } else if (segments.size() == 2 && segments[0] == "operations" && req.method == "GET") {
    method = "operations.get";
  } else if (path == "/billing/v1/skus" && req.method == "GET") {
    method = "skus.list";
  }
  if (method.empty()) return reply_of(yc_error(404, "No such method: " + req.method + " " + path));
  book_.count(method);
  auto injected = faults_.take(method);
  if (injected && *injected != FaultKind::lost) return fault_reply(*injected);
  YcAnswer answer;
  if (method == "operations.get") answer = compute_.operation(segments[1]);
  else if (method == "skus.list") answer = list_skus(to_map(*query), opts_.sku_page_size);
  else answer = compute_.handle(method, call);
  auto reply = reply_of(answer);
  reply.drop = injected == FaultKind::lost;  // carried out, but the answer never arrives
  return reply;
}

}  // namespace tsum::providers::yandex::fake
