#include "providers/fake_cloud/fake_server.h"

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
      server_([this](const http::LoopbackRequest& req) {
        auto reply = handle(req);
        sync_guests();
        return reply;
      }) {
  for (const auto& f : opts_.faults) faults_.add(f);
}

FakeServer::~FakeServer() { stop(); }

Result<std::uint16_t> FakeServer::start() { return server_.start(opts_.listen); }

void FakeServer::stop() { server_.stop(); }

void FakeServer::sync_guests() {
  if (guests_.enabled()) guests_.sync(api_.live_guests());
}

http::LoopbackReply FakeServer::handle(const http::LoopbackRequest& req) {
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
