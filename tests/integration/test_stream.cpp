// GET /v1/runs/{id}/stream: Server-Sent Events read off a raw socket. Against the real tsumd running real
// tsum-train, and in-process with a short heartbeat to see the heartbeat and each change arrive.
#include <doctest/doctest.h>

#include <boost/asio/post.hpp>
#include <cctype>
#include <future>
#include <sstream>

#include "api/http/http_server.h"
#include "api/routes/run_stream.h"
#include "daemon/fixture.h"
#include "daemon/runs/run_status.h"
#include "integration/daemon_process.h"

using namespace tsum;
using namespace tsum::testing;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

struct Event {
  std::string name;
  std::string data;
};

// The events in an SSE body; comment lines (": heartbeat") are counted in `comments`.
std::vector<Event> parse_events(const std::string& body, int* comments = nullptr) {
  std::vector<Event> out;
  size_t pos = 0;
  for (size_t end; (end = body.find("\n\n", pos)) != std::string::npos; pos = end + 2) {
    Event ev;
    std::istringstream lines(body.substr(pos, end - pos));
    for (std::string line; std::getline(lines, line);) {
      if (line.starts_with(":") && comments) ++*comments;
      if (line.starts_with("event: ")) ev.name = line.substr(7);
      if (line.starts_with("data: ")) ev.data = line.substr(6);
    }
    if (!ev.name.empty()) out.push_back(ev);
  }
  return out;
}

// Opens the stream on a raw connection; returns everything read until the server closed or `limit` passed.
api::RawRead read_stream(uint16_t port, const std::string& target, const std::string& token,
                         std::chrono::seconds limit, std::string* first_read = nullptr) {
  api::HttpConnection conn;
  REQUIRE(conn.connect("127.0.0.1", port));
  REQUIRE(conn.send_raw("GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + token +
                        "\r\nAccept: text/event-stream\r\n\r\n"));
  api::RawRead all;
  const auto end = std::chrono::steady_clock::now() + limit;
  bool first = true;
  while (!all.closed && std::chrono::steady_clock::now() < end) {
    auto part = conn.read_until_close(first ? 5000ms : 1000ms);
    if (first && first_read) *first_read = part.data;
    first = false;
    all.data += part.data;
    all.closed = part.closed;
  }
  return all;
}

std::string body_of(const std::string& raw) {
  auto split = raw.find("\r\n\r\n");
  REQUIRE(split != std::string::npos);
  return raw.substr(split + 4);
}

bool contains_ci(std::string haystack, std::string needle) {
  for (auto* s : {&haystack, &needle})
    for (char& c : *s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return haystack.find(needle) != std::string::npos;
}

int status_rank(const std::string& s) {
  auto st = daemon::parse_status(s);
  REQUIRE(st.has_value());
  return static_cast<int>(*st);
}

}  // namespace

TEST_CASE("run stream: the run at once, then each change, ending after done; auth and unknown runs refused") {
  TempDir dir;
  DaemonProcess d(dir.file("t.db"));
  std::string admin = d.admin_token();
  d.start();
  CHECK(d.call("GET", "/v1/runs/1/stream", "").status == 401);
  CHECK(d.call("GET", "/v1/runs/1/stream", admin).status == 404);
  CHECK(d.call("GET", "/v1/runs/x/stream", admin).status == 404);
  REQUIRE(d.call("POST", "/v1/experiments", admin, tiny_experiment(300, 200, {"local-1c"})).status == 201);

  std::string first;
  auto raw = read_stream(d.port(), "/v1/runs/1/stream", admin, 240s, &first);
  INFO(raw.data.substr(0, 4000));
  INFO(d.log());
  REQUIRE(raw.closed);  // the daemon ends the stream once the run is terminal
  CHECK(raw.data.starts_with("HTTP/1.1 200"));
  CHECK(contains_ci(raw.data, "content-type: text/event-stream"));
  CHECK(contains_ci(raw.data, "connection: close"));
  CHECK(first.find("event: run\ndata: {") != std::string::npos);  // the current state, without waiting

  auto events = parse_events(body_of(raw.data));
  REQUIRE(events.size() >= 3);
  std::vector<std::string> statuses;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    REQUIRE(events[i].name == "run");
    auto run = json::parse(events[i].data);
    CHECK(run["id"] == 1);
    if (statuses.empty() || statuses.back() != run["status"]) statuses.push_back(run["status"]);
  }
  INFO("statuses seen: " << json(statuses).dump());
  for (size_t i = 1; i < statuses.size(); ++i) CHECK(status_rank(statuses[i - 1]) < status_rank(statuses[i]));
  CHECK(statuses.size() >= 5);  // the stream saw the run move, not just its end
  CHECK(statuses.back() == "done");
  auto last_run = json::parse(events[events.size() - 2].data);
  CHECK(last_run["t_sum"].is_number());
  CHECK(last_run["epochs"].size() == 1);
  CHECK(events.back().name == "end");
  CHECK(json::parse(events.back().data) == json{{"status", "done"}});

  // A finished run's stream sends it once and ends at once.
  auto done = read_stream(d.port(), "/v1/runs/1/stream", admin, 10s);
  CHECK(done.closed);
  auto again = parse_events(body_of(done.data));
  REQUIRE(again.size() == 2);
  CHECK(json::parse(again[0].data)["status"] == "done");
  CHECK(again[1].name == "end");
}

TEST_CASE("run stream in process: heartbeats while idle, an event per ledger change, closed by the watch") {
  DaemonFixture f;
  daemon::Views views(f.store, f.ledger);
  boost::asio::io_context io;
  daemon::RunWatch watch(io.get_executor());
  f.ledger.set_observer([&](int64_t id) { watch.notify(id); });
  api::Router router;
  router.add("GET", "/s/{id}", [&](api::Request& req) -> boost::asio::awaitable<api::Response> {
    api::Response res;
    res.content_type = "text/event-stream";
    res.streamer = api::run_event_stream(views, watch, std::stoll(req.params.at("id")), {.heartbeat = 100ms});
    co_return res;
  });
  api::HttpServer server(io, router);
  auto port = server.listen("127.0.0.1", 0);
  REQUIRE(port.ok());
  std::thread loop([&] { io.run(); });
  auto on_io = [&](auto fn) {  // the ledger and the watch live on the io thread
    std::promise<void> done;
    boost::asio::post(io, [&] {
      fn();
      done.set_value();
    });
    done.get_future().wait();
  };

  api::HttpConnection conn;
  REQUIRE(conn.connect("127.0.0.1", *port));
  REQUIRE(conn.send_raw("GET /s/1 HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::string seen = conn.read_for(500ms).data;  // the run now, then heartbeats every 100 ms
  on_io([&] { REQUIRE(f.ledger.advance(1, daemon::RunStatus::provisioning, "dispatched").ok()); });
  seen += conn.read_for(300ms).data;
  on_io([&] { watch.close(); });
  auto rest = conn.read_until_close(5000ms);
  seen += rest.data;
  CHECK(rest.closed);

  int comments = 0;
  auto events = parse_events(body_of(seen), &comments);
  INFO(seen);
  CHECK(comments >= 2);
  REQUIRE(events.size() == 2);  // heartbeats carry no event; only the change does
  CHECK(json::parse(events[0].data)["status"] == "queued");
  CHECK(json::parse(events[1].data)["status"] == "provisioning");
  server.stop();
  loop.join();
}
