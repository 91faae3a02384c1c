#include "providers/hetzner/fake/fake_hetzner_cloud.h"

#include <openssl/crypto.h>

#include "providers/aws/codec.h"

namespace tsum::providers::hetzner::fake {

namespace {

http::LoopbackReply reply_of(const JsonAnswer& a) {
  return {.status = a.status, .headers = {{"Content-Type", "application/json"}}, .body = a.body.dump()};
}

bool same(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

// The action a request names, and the server id for /servers/{id}; empty action for none.
std::pair<std::string, std::string> route(const std::string& method, std::string_view path) {
  if (path == "/v1/servers") return {method == "POST" ? "servers.create" : method == "GET" ? "servers.list" : "", ""};
  if (path == "/v1/server_types" && method == "GET") return {"server_types.list", ""};
  if (path.starts_with("/v1/servers/")) {
    std::string id(path.substr(12));
    if (id.empty() || id.find('/') != std::string::npos) return {"", ""};
    return {method == "GET" ? "servers.get" : method == "DELETE" ? "servers.delete" : "", id};
  }
  return {"", ""};
}

}  // namespace

FakeHetznerCloud::FakeHetznerCloud(FakeHetznerCloudOptions opts)
    : opts_(std::move(opts)),
      clock_(opts_.clock ? *opts_.clock : system_clock_),
      servers_(opts_.servers, clock_),
      server_([this](const http::LoopbackRequest& req) {
        auto reply = handle(req);
        sync_guests();
        return reply;
      }) {
  if (!opts_.guest.root.empty()) guest_.emplace(opts_.guest);
}

FakeHetznerCloud::~FakeHetznerCloud() { stop(); }

Status FakeHetznerCloud::guest_shutdown(long long id) {
  Status s = servers_.guest_shutdown(id);
  sync_guests();
  return s;
}

void FakeHetznerCloud::sync_guests() {
  if (!guest_) return;
  std::vector<fake_guest::LiveInstance> up;
  for (auto& s : servers_.servers())
    if (s.status == "initializing" || s.status == "starting" || s.status == "running")
      up.push_back({std::to_string(s.id), std::move(s.user_data)});
  guest_->sync(up);
}

Result<std::uint16_t> FakeHetznerCloud::start() {
  if (opts_.token.empty()) return make_error(Code::invalid_argument, "fake hetzner: no API token");
  return server_.start(opts_.listen);
}

void FakeHetznerCloud::stop() { server_.stop(); }

int FakeHetznerCloud::requests(std::string_view action) const {
  std::lock_guard lock(mu_);
  auto it = requests_.find(action);
  return it == requests_.end() ? 0 : it->second;
}

int FakeHetznerCloud::rejected() const {
  std::lock_guard lock(mu_);
  return rejected_;
}

http::LoopbackReply FakeHetznerCloud::fault_reply(FaultKind kind) const {
  switch (kind) {
    case FaultKind::throttle_429: {
      auto r = reply_of(hetzner_error(429, "rate_limit_exceeded", "limit of 3600 requests per hour reached"));
      r.headers.emplace_back("Retry-After", std::to_string(opts_.retry_after_s));
      return r;
    }
    case FaultKind::unavailable_503:
      return reply_of(hetzner_error(503, "unavailable", "service temporarily unavailable"));
    case FaultKind::internal_500:
      return reply_of(hetzner_error(500, "server_error", "an internal error occurred"));
    case FaultKind::timeout:
    case FaultKind::lost:
      break;
  }
  return {.delay = opts_.hang, .drop = true};  // timeout: hold the connection, then close it unanswered
}

JsonAnswer FakeHetznerCloud::dispatch(const std::string& action, const std::string& id,
                                      const std::map<std::string, std::string>& query, const std::string& body) {
  if (action == "servers.create") return servers_.create(body);
  if (action == "servers.list") return servers_.list(query);
  if (action == "servers.get") return servers_.get(id);
  if (action == "servers.delete") return servers_.remove(id);
  return list_server_types(query, opts_.servers.page_size);
}

http::LoopbackReply FakeHetznerCloud::handle(const http::LoopbackRequest& req) {
  auto auth = http::find_header(req.headers, "Authorization");
  if (!auth || !auth->starts_with("Bearer ") || !same(auth->substr(7), opts_.token)) {
    {
      std::lock_guard lock(mu_);
      ++rejected_;
    }
    std::string got = auth && auth->starts_with("Bearer ") ? std::string(auth->substr(7)) : "none";
    return reply_of(hetzner_error(401, "unauthorized", "unable to authenticate with token '" + got + "'"));
  }
  auto q = req.target.find('?');
  auto parsed = aws::parse_query(q == std::string::npos ? std::string_view() : std::string_view(req.target).substr(q + 1),
                                 /*plus_is_space=*/true);
  if (!parsed) return reply_of(hetzner_error(400, "invalid_input", "malformed query: " + parsed.error().detail));
  std::map<std::string, std::string> query;
  for (auto& [k, v] : *parsed) query.emplace(k, v);
  auto [action, id] = route(req.method, std::string_view(req.target).substr(0, q));
  if (action.empty()) return reply_of(hetzner_error(404, "not_found", "no route " + req.method + " " + req.target));
  {
    std::lock_guard lock(mu_);
    ++requests_[action];
  }
  auto fault = faults_.take(action);
  if (fault && *fault != FaultKind::lost) return fault_reply(*fault);
  http::LoopbackReply reply = reply_of(dispatch(action, id, query, req.body));
  reply.drop = fault == FaultKind::lost;  // carried out, but the answer never arrives
  return reply;
}

}  // namespace tsum::providers::hetzner::fake
