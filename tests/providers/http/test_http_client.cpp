// HttpClient against a real loopback HTTPS server: retry semantics (429 + Retry-After, 5xx, timeouts,
// dropped connections, 4xx not retried), the overall deadline, TLS trust, and concurrent sends.
// Time bounds are one-sided or generous: they catch a missing wait or a missing deadline, not slowness.
#include <doctest/doctest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <deque>
#include <mutex>

#include "providers/http/http_client.h"
#include "tests/fakes/http/loopback_server.h"
#include "support/run_sync.h"
#include "support/test_tls.h"

using namespace tsum;
using namespace tsum::providers::http;
using namespace std::chrono_literals;
using tsum::testing::run_sync;
using steady = std::chrono::steady_clock;

namespace {

// Replies in the order given, then `fallback`; records what arrived and when.
class Script {
 public:
  void push(LoopbackReply r) {
    std::lock_guard lock(mu_);
    replies_.push_back(std::move(r));
  }
  void set_fallback(LoopbackReply r) {
    std::lock_guard lock(mu_);
    fallback_ = std::move(r);
  }
  LoopbackReply next(const LoopbackRequest& req) {
    std::lock_guard lock(mu_);
    seen_.push_back({req, steady::now()});
    if (replies_.empty()) return fallback_;
    auto r = std::move(replies_.front());
    replies_.pop_front();
    return r;
  }
  int count() {
    std::lock_guard lock(mu_);
    return static_cast<int>(seen_.size());
  }
  std::pair<LoopbackRequest, steady::time_point> seen(int i) {
    std::lock_guard lock(mu_);
    return seen_.at(static_cast<std::size_t>(i));
  }

 private:
  std::mutex mu_;
  std::deque<LoopbackReply> replies_;
  LoopbackReply fallback_{.status = 200, .body = "ok"};
  std::vector<std::pair<LoopbackRequest, steady::time_point>> seen_;
};

struct Fixture {
  testing::TestTls tls;
  Script script;
  LoopbackServer server{[this](const LoopbackRequest& r) { return script.next(r); }};
  std::string url;

  Fixture() {
    auto port = server.start({.cert_file = tls.cert_file(), .key_file = tls.key_file()});
    REQUIRE(port.ok());
    url = server.base_url() + "/thing";
  }

  HttpClientOptions options(RetryPolicy retry = {.max_attempts = 5, .base_delay = 10ms, .max_delay = 50ms,
                                                 .deadline = 20s}) {
    return {.ca_file = tls.ca_file(), .threads = 2, .retry = retry};
  }
  HttpRequest get(std::chrono::milliseconds timeout = 5s) { return {.url = url, .timeout = timeout}; }
};

double seconds_since(steady::time_point t0) { return std::chrono::duration<double>(steady::now() - t0).count(); }

}  // namespace

TEST_CASE("a 429 with Retry-After is retried no earlier than the server asked") {
  Fixture f;
  f.script.push({.status = 429, .headers = {{"Retry-After", "1"}}, .body = "slow down"});
  HttpClient client(f.options());
  auto t0 = steady::now();
  auto r = run_sync(client.send(f.get()));
  REQUIRE(r.ok());
  CHECK(r->status == 200);
  CHECK(r->body == "ok");
  CHECK(r->attempts == 2);
  REQUIRE(f.script.count() == 2);
  CHECK(f.script.seen(1).second - f.script.seen(0).second >= 1s);
  CHECK(seconds_since(t0) >= 1.0);
}

TEST_CASE("5xx answers are retried until one succeeds") {
  Fixture f;
  f.script.push({.status = 503});
  f.script.push({.status = 500});
  f.script.push({.status = 502});
  HttpClient client(f.options());
  auto r = run_sync(client.send(f.get()));
  REQUIRE(r.ok());
  CHECK(r->status == 200);
  CHECK(r->attempts == 4);
  CHECK(f.script.count() == 4);
}

TEST_CASE("a 404 (any 4xx but 429) is returned at once, not retried") {
  Fixture f;
  f.script.push({.status = 404, .body = "no such thing"});
  HttpClient client(f.options());
  auto r = run_sync(client.send(f.get()));
  REQUIRE(r.ok());
  CHECK(r->status == 404);
  CHECK(r->body == "no such thing");
  CHECK(r->attempts == 1);
  CHECK(f.script.count() == 1);
}

TEST_CASE("after max_attempts the last 5xx response is returned") {
  Fixture f;
  f.script.set_fallback({.status = 503, .body = "down"});
  HttpClient client(f.options({.max_attempts = 3, .base_delay = 10ms, .max_delay = 20ms, .deadline = 20s}));
  auto r = run_sync(client.send(f.get()));
  REQUIRE(r.ok());
  CHECK(r->status == 503);
  CHECK(r->attempts == 3);
  CHECK(f.script.count() == 3);
}

TEST_CASE("an attempt that times out is retried") {
  Fixture f;
  f.script.push({.delay = 5s});  // far longer than the attempt's timeout
  HttpClient client(f.options());
  auto r = run_sync(client.send(f.get(300ms)));
  REQUIRE(r.ok());
  CHECK(r->status == 200);
  CHECK(r->attempts == 2);
  CHECK(f.script.count() == 2);
}

TEST_CASE("a connection closed without an answer (a lost response) is retried") {
  Fixture f;
  f.script.push({.drop = true});
  HttpClient client(f.options());
  HttpRequest post{.method = "POST", .url = f.url, .headers = {{"Content-Type", "text/plain"}}, .body = "make one"};
  auto r = run_sync(client.send(post));
  REQUIRE(r.ok());
  CHECK(r->status == 200);
  CHECK(r->attempts == 2);
  REQUIRE(f.script.count() == 2);
  CHECK(f.script.seen(1).first.body == "make one");  // the retry carried the body again
}

TEST_CASE("the overall deadline ends the retries of a server that never answers") {
  Fixture f;
  f.script.set_fallback({.delay = 30s});
  HttpClient client(f.options({.max_attempts = 100, .base_delay = 10ms, .max_delay = 50ms, .deadline = 1500ms}));
  auto t0 = steady::now();
  auto r = run_sync(client.send(f.get(400ms)));
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == Code::timeout);
  CHECK(r.error().detail.find("deadline") != std::string::npos);
  CHECK(f.script.count() >= 2);
  CHECK(seconds_since(t0) < 10.0);  // generous: the deadline is 1.5 s
}

TEST_CASE("a Retry-After beyond the deadline returns the 429 instead of waiting") {
  Fixture f;
  f.script.set_fallback({.status = 429, .headers = {{"Retry-After", "3600"}}});
  HttpClient client(f.options({.max_attempts = 5, .base_delay = 10ms, .max_delay = 50ms, .deadline = 120s}));
  auto t0 = steady::now();
  auto r = run_sync(client.send(f.get()));
  REQUIRE(r.ok());
  CHECK(r->status == 429);
  CHECK(f.script.count() == 1);
  CHECK(seconds_since(t0) < 60.0);  // it did not wait for the Retry-After, nor for the deadline
}

TEST_CASE("connection refused is retried, then reported as unavailable") {
  std::string url;
  {
    Fixture f;
    url = f.url;
  }  // the server is gone: its port refuses connections
  HttpClient client({.retry = {.max_attempts = 3, .base_delay = 10ms, .max_delay = 20ms, .deadline = 10s}});
  HttpRequest req{.url = url, .timeout = 2s};
  auto r = run_sync(client.send(req));
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == Code::unavailable);
}

TEST_CASE("a server whose certificate is not trusted is refused and not retried") {
  Fixture f;
  HttpClient client({.retry = {.max_attempts = 5, .base_delay = 10ms, .max_delay = 20ms, .deadline = 10s}});
  auto r = run_sync(client.send(f.get()));  // system CA store: the test CA is unknown to it
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == Code::invalid_argument);
  CHECK(f.script.count() == 0);
  auto bad_url = run_sync(client.send({.url = "ftp://example.com/"}));
  CHECK(bad_url.code() == Code::invalid_argument);
}

TEST_CASE("method, headers and body travel both ways") {
  Fixture f;
  f.script.push({.status = 201, .headers = {{"X-Answer", "42"}, {"X-Answer", "43"}}, .body = "created"});
  HttpClient client(f.options());
  HttpRequest put{.method = "PUT", .url = f.url + "?a=1", .headers = {{"X-Custom", "v 1"}, {"Content-Type", "application/json"}},
                  .body = R"({"k": "v"})"};
  auto r = run_sync(client.send(put));
  REQUIRE(r.ok());
  CHECK(r->status == 201);
  CHECK(r->body == "created");
  CHECK(r->header("x-answer") == "42");
  auto [req, _] = f.script.seen(0);
  CHECK(req.method == "PUT");
  CHECK(req.target == "/thing?a=1");
  CHECK(find_header(req.headers, "X-Custom") == "v 1");
  CHECK_FALSE(find_header(req.headers, "Expect").has_value());
  CHECK(req.body == R"({"k": "v"})");
}

TEST_CASE("every request says User-Agent: tsum/<project version>, unless it names its own") {
  Fixture f;
  HttpClient client(f.options());
  auto plain = run_sync(client.send(f.get()));
  REQUIRE(plain.ok());
  HttpRequest own{.url = f.url, .headers = {{"User-Agent", "probe/9"}}};
  REQUIRE(run_sync(client.send(own)).ok());
  HttpClientOptions none = f.options();
  none.user_agent = "";
  HttpClient anonymous(none);
  REQUIRE(run_sync(anonymous.send(f.get())).ok());

  REQUIRE(f.script.count() == 3);
  CHECK(default_user_agent() == "tsum/" TSUM_VERSION);  // CMake's project(... VERSION)
  CHECK(std::string(TSUM_VERSION).find('.') != std::string::npos);
  CHECK(find_header(f.script.seen(0).first.headers, "User-Agent") == "tsum/" TSUM_VERSION);
  int agents = 0;
  for (const auto& [name, value] : f.script.seen(1).first.headers) agents += iequals(name, "User-Agent");
  CHECK(agents == 1);  // replaced, not sent twice
  CHECK(find_header(f.script.seen(1).first.headers, "User-Agent") == "probe/9");
  CHECK_FALSE(find_header(f.script.seen(2).first.headers, "User-Agent").has_value());
}

TEST_CASE("sends from many coroutines share the worker threads and all complete") {
  Fixture f;
  f.script.set_fallback({.status = 200, .body = "ok", .delay = 100ms});
  HttpClient client(f.options());
  boost::asio::io_context io;
  int done = 0;
  for (int i = 0; i < 8; ++i)
    boost::asio::co_spawn(
        io,
        [&]() -> boost::asio::awaitable<void> {
          HttpRequest req = f.get();
          auto r = co_await client.send(req);
          if (r.ok() && r->status == 200) ++done;
        },
        boost::asio::detached);
  io.run();
  CHECK(done == 8);
  CHECK(f.script.count() == 8);
}

TEST_CASE("with reuse_connections, requests one after another share a connection; a closed one is replaced") {
  Fixture f;
  HttpClient client({.ca_file = f.tls.ca_file(), .threads = 1, .reuse_connections = true});
  for (int i = 0; i < 3; ++i) REQUIRE(run_sync(client.send(f.get())).ok());
  REQUIRE(f.script.count() == 3);
  CHECK(f.script.seen(1).first.peer_port == f.script.seen(0).first.peer_port);
  CHECK(f.script.seen(2).first.peer_port == f.script.seen(0).first.peer_port);
  // The server closes this connection after answering: the next request connects again and succeeds.
  f.script.push({.status = 200, .headers = {{"Connection", "close"}}, .body = "bye"});
  REQUIRE(run_sync(client.send(f.get())).ok());
  auto r = run_sync(client.send(f.get()));
  REQUIRE(r.ok());
  CHECK(r->status == 200);
  REQUIRE(f.script.count() == 5);
  CHECK(f.script.seen(4).first.peer_port != f.script.seen(0).first.peer_port);
}

TEST_CASE("plain HTTP works as well") {
  Script script;
  LoopbackServer server([&](const LoopbackRequest& r) { return script.next(r); });
  REQUIRE(server.start({}).ok());
  CHECK(server.base_url().starts_with("http://127.0.0.1:"));
  HttpClient client;
  auto r = run_sync(client.send({.url = server.base_url() + "/"}));
  REQUIRE(r.ok());
  CHECK(r->status == 200);
}

TEST_CASE("retry policy arithmetic") {
  RetryPolicy p{.base_delay = 100ms, .max_delay = 1000ms};
  CHECK(backoff_delay(p, 1, 0.0) == 50ms);
  CHECK(backoff_delay(p, 1, 0.999) <= 100ms);
  CHECK(backoff_delay(p, 3, 0.0) == 200ms);       // 100 * 2^2 = 400, half fixed
  CHECK(backoff_delay(p, 10, 0.999) <= 1000ms);   // capped
  CHECK(backoff_delay(p, 10, 0.0) == 500ms);
  CHECK(backoff_delay(p, 1000, 0.5) <= 1000ms);   // no overflow
  CHECK(parse_retry_after(" 7 ") == std::chrono::seconds(7));
  CHECK_FALSE(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT").has_value());
  CHECK_FALSE(parse_retry_after("-1").has_value());
  CHECK(retryable_status(429));
  CHECK(retryable_status(503));
  CHECK_FALSE(retryable_status(501));
  CHECK_FALSE(retryable_status(404));
  CHECK_FALSE(retryable_status(200));
}
