#include "api/routes/run_stream.h"

#include "daemon/runs/run_status.h"

namespace tsum::api {

namespace {

namespace asio = boost::asio;
using daemon::RunWatch;

// Writes `text` with a deadline. False when the peer is gone or the deadline passed.
asio::awaitable<bool> send(StreamWriter& out, const std::string& text, std::chrono::milliseconds timeout) {
  co_return co_await out.write(text, timeout);
}

bool is_terminal_status(const nlohmann::json& run) {
  auto status = daemon::parse_status(run.value("status", ""));
  return !status || daemon::is_terminal(*status);
}

// One SSE event; `data` is single-line JSON (nlohmann escapes newlines inside strings).
std::string event(std::string_view name, const nlohmann::json& data) {
  return "event: " + std::string(name) + "\ndata: " + data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
         "\n\n";
}

asio::awaitable<void> stream_run(daemon::Views& views, RunWatch& watch, int64_t run_id, RunStreamOptions opts,
                                 StreamWriter& out) {
  const std::string heartbeat = ": heartbeat\n\n";
  std::string last_sent;
  for (;;) {
    const uint64_t seen = watch.version(run_id);
    auto run = views.run(run_id);
    if (!run) co_return;  // deleted or unreadable: end the stream; the client re-fetches and sees why
    std::string text = event("run", *run);
    if (text != last_sent) {
      bool sent = co_await send(out, text, opts.write_timeout);
      if (!sent) co_return;
      last_sent = std::move(text);
    }
    if (is_terminal_status(*run)) {
      const std::string end = event("end", {{"status", (*run)["status"]}});
      co_await send(out, end, opts.write_timeout);
      co_return;
    }
    RunWatch::Wake wake = co_await watch.wait(run_id, seen, opts.heartbeat);
    if (wake == RunWatch::Wake::closed) co_return;
    if (wake == RunWatch::Wake::timeout) {
      bool alive = co_await send(out, heartbeat, opts.write_timeout);
      if (!alive) co_return;
    }
  }
}

}  // namespace

Streamer run_event_stream(daemon::Views& views, daemon::RunWatch& watch, int64_t run_id, RunStreamOptions opts) {
  return [&views, &watch, run_id, opts](StreamWriter& out) -> asio::awaitable<void> {
    co_await stream_run(views, watch, run_id, opts, out);
  };
}

}  // namespace tsum::api
