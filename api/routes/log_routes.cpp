#include "api/routes/log_routes.h"

#include <charconv>
#include <cmath>

#include "api/routes/route_helpers.h"
#include "daemon/runs/run_status.h"

namespace tsum::api {

using nlohmann::json;
using Awaitable = boost::asio::awaitable<Response>;
namespace asio = boost::asio;

namespace {

// The query parameter `key` as a number in [lo, hi]; `fallback` when absent; nullopt when malformed.
std::optional<double> query_number(const Request& req, const std::string& key, double lo, double hi, double fallback) {
  auto it = req.query.find(key);
  if (it == req.query.end()) return fallback;
  double v = 0;
  const std::string& s = it->second;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || !std::isfinite(v) || v < lo || v > hi) return std::nullopt;
  return v;
}

Response bad_query(const std::string& key, const std::string& range) {
  return unprocessable("query parameter '" + key + "' must be " + range);
}

constexpr double kMaxSeq = 9007199254740992.0;  // 2^53: every integer up to it is exact in a double

struct Page {
  std::vector<daemon::LogLine> lines;
  std::string status;
  bool ended = false;
};

// The lines after `after` and the run's status, read status first: lines a run sent before it ended are all
// in the page that sees it ended.
Result<Page> page(LogContext& c, int64_t id, int64_t after, int limit) {
  auto st = c.ledger.status(id);
  if (!st) return st.error();
  auto lines = c.logs.read(id, after, limit);
  if (!lines) return lines.error();
  Page p{std::move(*lines), std::string(daemon::status_name(*st)), daemon::is_terminal(*st)};
  return p;
}

asio::awaitable<void> follow(LogContext c, int64_t id, int64_t after, StreamWriter& out) {
  const std::chrono::milliseconds write_timeout(10000);
  const std::string keepalive = "\n";
  for (;;) {
    const uint64_t seen = c.watch.version(id);
    auto p = page(c, id, after, 1000);
    if (!p) co_return;
    std::string chunk;
    for (const auto& l : p->lines) {
      chunk += l.to_json().dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
      after = l.seq;
    }
    if (!chunk.empty()) {
      const bool sent = co_await out.write(chunk, write_timeout);
      if (!sent) co_return;
    }
    if (p->lines.size() == 1000) continue;  // more to send
    if (p->ended) {
      const std::string end = json{{"end", p->status}}.dump() + "\n";
      co_await out.write(end, write_timeout);
      co_return;
    }
    auto wake = co_await c.watch.wait(id, seen, std::chrono::seconds(15));
    if (wake == daemon::RunWatch::Wake::closed) co_return;
    if (wake == daemon::RunWatch::Wake::timeout) {
      const bool alive = co_await out.write(keepalive, write_timeout);
      if (!alive) co_return;
    }
  }
}

}  // namespace

void add_log_routes(Router& router, LogContext c) {
  // An agent's lines: parsed where the connection lives, stored as one job of the group commit (as its events).
  router.add("POST", "/v1/runs/{id}/logs", [c](Request& req) mutable -> Awaitable {
    auto id = id_param(req);
    auto source = req.query.count("source") ? req.query.at("source") : std::string();
    auto from = query_number(req, "from", 0, kMaxSeq, -1);
    auto now = query_number(req, "now", 0, 1e9, -1);
    auto lines = daemon::RunLogs::parse_body(req.body);
    Response res;
    auto committed = co_await c.commits.run([&] {
      if (auto denied = check_auth(req, c.tokens, id.value_or(-1))) {
        res = *denied;
      } else if (!id) {
        res = error_response(404, "not_found", "no run '" + req.params["id"] + "'");
      } else if (!daemon::RunLogs::is_source(source)) {
        res = bad_query("source", "1 to 16 of a-z and 0-9 (a1n0: attempt 1, node 0)");
      } else if (!from || *from < 0) {
        res = bad_query("from", "the number of the body's first line, 0 to 2^53");
      } else if (!now || *now < 0) {
        res = bad_query("now", "the machine's CLOCK_BOOTTIME as it sent, 0 to 1e9");
      } else if (!lines) {
        res = unprocessable(lines.error().detail);
      } else if (auto st = c.ledger.status(*id); !st) {
        res = from_error(st.error());
      } else if (auto next = c.logs.append(*id, source, static_cast<int64_t>(*from), *now, *lines); next) {
        if (!lines->empty()) c.watch.notify(*id);
        res = json_response(200, {{"next", *next}});
      } else if (next.error().code == Code::already_exists) {
        auto held = c.logs.next(*id, source);
        res = json_response(409, {{"error", "already_exists"}, {"detail", next.error().detail}, {"next", held ? *held : int64_t{0}}});
      } else {
        res = from_error(next.error());
      }
    });
    if (!committed) co_return from_error(committed.error());
    co_return res;
  }, {.body_limit = daemon::RunLogs::kBodyBytes, .any_thread = true});

  router.add("GET", "/v1/runs/{id}/logs", [c](Request& req) mutable -> Awaitable {
    if (auto denied = check_auth(req, c.tokens)) co_return *denied;
    auto id = id_param(req);
    if (!id) co_return error_response(404, "not_found", "no run '" + req.params["id"] + "'");
    for (const auto& [key, _] : req.query)
      if (key != "after" && key != "limit" && key != "wait" && key != "follow")
        co_return unprocessable("unknown query parameter '" + key + "' (after, limit, wait, follow)");
    auto after = query_number(req, "after", 0, kMaxSeq, 0);
    auto limit = query_number(req, "limit", 1, 10000, 1000);
    auto wait = query_number(req, "wait", 0, 60, 0);
    auto follow_flag = query_number(req, "follow", 0, 1, 0);
    if (!after || std::floor(*after) != *after) co_return bad_query("after", "a line's seq, 0 to 2^53");
    if (!limit || std::floor(*limit) != *limit) co_return bad_query("limit", "a whole number, 1 to 10000");
    if (!wait) co_return bad_query("wait", "seconds, 0 to 60");
    if (!follow_flag || std::floor(*follow_flag) != *follow_flag) co_return bad_query("follow", "0 or 1");
    if (auto st = c.ledger.status(*id); !st) co_return error_response(st.error());
    int64_t from = static_cast<int64_t>(*after);
    if (*follow_flag == 1) {
      Response res;
      res.content_type = "application/x-ndjson";
      res.headers = {{"Cache-Control", "no-store"}, {"X-Accel-Buffering", "no"}};
      res.streamer = [c, id = *id, from](StreamWriter& out) -> asio::awaitable<void> { co_await follow(c, id, from, out); };
      co_return res;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(*wait * 1000));
    for (;;) {
      const uint64_t seen = c.watch.version(*id);
      auto p = page(c, *id, from, static_cast<int>(*limit));
      if (!p) co_return error_response(p.error());
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (p->lines.empty() && !p->ended && left.count() > 0) {
        if (co_await c.watch.wait(*id, seen, left) != daemon::RunWatch::Wake::closed) continue;
      }
      auto dropped = c.logs.dropped(*id);
      json lines = json::array();
      for (const auto& l : p->lines) lines.push_back(l.to_json());
      const bool done = p->ended && static_cast<int>(p->lines.size()) < static_cast<int>(*limit);
      co_return json_response(200, {{"lines", lines},
                                    {"after", p->lines.empty() ? from : p->lines.back().seq},
                                    {"dropped", dropped ? *dropped : int64_t{0}},
                                    {"status", p->status},
                                    {"done", done}});
    }
  });
}

}  // namespace tsum::api
