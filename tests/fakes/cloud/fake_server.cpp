#include "tests/fakes/cloud/fake_server.h"

#include <cstdlib>
#include <iostream>

namespace tsum::providers::fake_cloud {

const Clock& clock_or_system(const Clock* clock) {
  static const SystemClock system;
  return clock ? *clock : system;
}

FakeServer::FakeServer(FakeServerOptions opts, FakeCloudApi& api)
    : opts_(std::move(opts)),
      clock_(clock_or_system(opts_.clock)),
      api_(api),
      guests_(opts_.guest),
      metadata_([this](const http::LoopbackRequest& req) { return api_.metadata(req, guests_.instance_at(req.peer)); }),
      server_([this](const http::LoopbackRequest& req) {
        auto reply = handle(req);
        sync_guests();
        return reply;
      }) {
  for (const auto& f : opts_.faults) faults_.add(f);
}

FakeServer::~FakeServer() { stop(); }

Result<std::uint16_t> FakeServer::start() {
  if (!opts_.metadata.host.empty()) {
    if (auto port = metadata_.start(opts_.metadata); !port) return port.error();
    std::cout << "metadata service on " << metadata_.base_url() << std::endl;
  }
  return server_.start(opts_.listen);
}

void FakeServer::stop() {
  server_.stop();
  metadata_.stop();
}

void FakeServer::sync_guests() {
  if (guests_.enabled()) guests_.sync(api_.live_guests());
}

http::LoopbackReply FakeServer::handle(const http::LoopbackRequest& req) {
  if (req.target.starts_with("/_fake/interrupt/")) return interrupt(req);
  if (req.target.starts_with("/_fake/capacity/")) return capacity(req);
  Route route = api_.route(req);
  if (route.refused) book_.reject();
  if (route.answer || !route.call) return std::move(route.answer).value_or(http::LoopbackReply{.status = 500});
  book_.count(route.method);
  auto fault = faults_.take(route.method);
  if (fault && *fault != FaultKind::lost) return fault_reply(*fault, route.method);
  http::LoopbackReply reply = route.call();
  reply.drop = reply.drop || fault == FaultKind::lost;  // carried out, but the answer never arrives
  return reply;
}

http::LoopbackReply FakeServer::interrupt(const http::LoopbackRequest& req) {
  auto answer = [](int status, const std::string& text) {
    return http::LoopbackReply{.status = status, .headers = {{"Content-Type", "text/plain"}}, .body = text + "\n"};
  };
  if (req.method != "POST") return answer(405, "POST /_fake/interrupt/<instance id>[?notice_s=S]");
  std::string rest = req.target.substr(std::string_view("/_fake/interrupt/").size());
  std::optional<double> notice_s;
  if (auto q = rest.find('?'); q != std::string::npos) {
    const std::string query = rest.substr(q + 1);
    rest.resize(q);
    if (!query.starts_with("notice_s=")) return answer(400, "the only parameter is notice_s");
    char* end = nullptr;
    const std::string v = query.substr(9);
    const double s = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(s >= 0)) return answer(400, "notice_s must be a number >= 0");
    notice_s = s;
  }
  if (auto st = api_.interrupt(rest, notice_s); !st)
    return answer(st.error().code == Code::not_found ? 404 : 400, st.error().detail);
  sync_guests();
  return answer(200, "interrupting " + rest);
}

http::LoopbackReply FakeServer::capacity(const http::LoopbackRequest& req) {
  auto answer = [](int status, const std::string& text) {
    return http::LoopbackReply{.status = status, .headers = {{"Content-Type", "text/plain"}}, .body = text + "\n"};
  };
  const std::string usage = "POST /_fake/capacity/<region>?spot=N (N machines left; -1: no limit)";
  if (req.method != "POST") return answer(405, usage);
  std::string rest = req.target.substr(std::string_view("/_fake/capacity/").size());
  const auto q = rest.find('?');
  if (q == std::string::npos || rest.substr(q + 1, 5) != "spot=") return answer(400, usage);
  const std::string v = rest.substr(q + 6);
  rest.resize(q);
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < -1 || n > 1000000) return answer(400, usage);
  std::optional<int> left;
  if (n >= 0) left = static_cast<int>(n);
  if (auto st = api_.set_spot_capacity(rest, left); !st)
    return answer(st.error().code == Code::not_found ? 404 : 400, st.error().detail);
  return answer(200, "spot capacity in " + rest + ": " + (left ? std::to_string(*left) : std::string("unlimited")));
}

http::LoopbackReply FakeServer::fault_reply(FaultKind kind, const std::string& method) const {
  switch (kind) {
    case FaultKind::throttle_429: {
      auto r = api_.fault_answer(429, method);
      r.headers.emplace_back("Retry-After", std::to_string(opts_.retry_after_s));
      return r;
    }
    case FaultKind::unavailable_503:
      return api_.fault_answer(503, method);
    case FaultKind::internal_500:
      return api_.fault_answer(500, method);
    case FaultKind::timeout:
    case FaultKind::lost:
      break;
  }
  return {.delay = opts_.hang, .drop = true};  // timeout: hold the connection, then close it unanswered
}

}  // namespace tsum::providers::fake_cloud
