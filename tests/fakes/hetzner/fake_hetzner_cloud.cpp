#include "tests/fakes/hetzner/fake_hetzner_cloud.h"

#include <openssl/crypto.h>

#include "tests/fakes/cloud/request.h"

namespace tsum::providers::hetzner::fake {

namespace {

using fake_cloud::Route;

http::LoopbackReply reply_of(const JsonAnswer& a) {
  return {.status = a.status, .headers = {{"Content-Type", "application/json"}}, .body = a.body.dump()};
}

bool same(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

FakeHetznerCloud::FakeHetznerCloud(FakeHetznerCloudOptions opts)
    : opts_(std::move(opts)), servers_(opts_.servers, fake_cloud::clock_or_system(opts_.server.clock)), server_(opts_.server, *this) {}

Result<std::uint16_t> FakeHetznerCloud::start() {
  if (opts_.token.empty()) return make_error(Code::invalid_argument, "fake hetzner: no API token");
  return server_.start();
}

Status FakeHetznerCloud::guest_shutdown(long long id) {
  Status s = servers_.guest_shutdown(id);
  server_.sync_guests();
  return s;
}

std::vector<fake_guest::LiveInstance> FakeHetznerCloud::live_guests() const {
  std::vector<fake_guest::LiveInstance> up;
  for (auto& s : servers_.servers())
    if (s.status == "initializing" || s.status == "starting" || s.status == "running")
      up.push_back({std::to_string(s.id), std::move(s.user_data)});
  return up;
}

http::LoopbackReply FakeHetznerCloud::fault_answer(int status, const std::string&) const {
  if (status == 429) return reply_of(hetzner_error(429, "rate_limit_exceeded", "limit of 3600 requests per hour reached"));
  if (status == 503) return reply_of(hetzner_error(503, "unavailable", "service temporarily unavailable"));
  return reply_of(hetzner_error(500, "server_error", "an internal error occurred"));
}

Route FakeHetznerCloud::route(const http::LoopbackRequest& req) {
  auto bearer = fake_cloud::CallBook::bearer(req);
  if (!bearer || !same(*bearer, opts_.token))
    return Route::refuse(reply_of(hetzner_error(401, "unauthorized", "unable to authenticate with token '" + bearer.value_or("none") + "'")));
  auto target = fake_cloud::parse_target(req);
  if (!target) return Route::reply(reply_of(hetzner_error(400, "invalid_input", "malformed query: " + target.error().detail)));
  const std::string& path = target->path;
  const std::string& m = req.method;
  auto to = [&](const char* method, auto call) {
    return Route::to(method, [call = std::move(call)] { return reply_of(call()); });
  };
  if (path == "/v1/servers" && m == "POST") return to("servers.create", [this, body = req.body] { return servers_.create(body); });
  if (path == "/v1/servers" && m == "GET") return to("servers.list", [this, q = target->query] { return servers_.list(q); });
  if (path == "/v1/server_types" && m == "GET")
    return to("server_types.list", [this, q = target->query] { return list_server_types(q, opts_.servers.page_size); });
  if (path.starts_with("/v1/servers/") && path.find('/', 12) == std::string::npos && path.size() > 12) {
    std::string id = path.substr(12);
    if (m == "GET") return to("servers.get", [this, id] { return servers_.get(id); });
    if (m == "DELETE") return to("servers.delete", [this, id] { return servers_.remove(id); });
  }
  return Route::reply(reply_of(hetzner_error(404, "not_found", "no route " + req.method + " " + req.target)));
}

}  // namespace tsum::providers::hetzner::fake
