// HttpServer over real loopback sockets: bad input, limits, handler failures, deadlines, stop(), listen().
#include "tests/api/test_server.h"

using namespace tsum;
using namespace tsum::api;
using namespace tsum::api::testing;
using tsum::api::HttpConnection;
using tsum::api::http_call;

TEST_CASE("server: malformed requests get 400 and close; the server keeps serving") {
  TestServer s;
  for (const char* garbage : {"GARBAGE\r\n\r\n", "GET /v1/runs/1 HTTP/1.1\r\nBad Header Line\r\n\r\n",
                              "GET /v1/runs/1 HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
                              "\x01\x02\x03 / HTTP/1.1\r\n\r\n"}) {
    HttpConnection conn;
    REQUIRE(conn.connect(kHost, s.port));
    REQUIRE(conn.send_raw(garbage));
    auto raw = conn.read_until_close(5s);
    CHECK(raw.closed);
    CHECK(raw.data.rfind("HTTP/1.1 400", 0) == 0);
    CHECK(contains(raw.data, "invalid_argument"));
  }
  HttpConnection conn;
  REQUIRE(conn.connect(kHost, s.port));
  REQUIRE(conn.send_raw("GET / HTTP/2.0\r\n\r\n"));  // only HTTP/1.x is spoken here
  CHECK(conn.read_until_close(5s).data.rfind("HTTP/1.1 400", 0) == 0);

  auto after = http_call(kHost, s.port, "GET", "/v1/runs/7");
  CHECK(after.status == 200);
}

TEST_CASE("server: oversized bodies get 413 and close") {
  TestServer s;  // body_limit 1024
  SUBCASE("Content-Length over the limit") {
    HttpConnection conn;
    REQUIRE(conn.connect(kHost, s.port));
    auto r = conn.call("POST", "/v1/runs/1/events", std::string(4096, 'x'));
    CHECK(r.status == 413);
    CHECK(r.json()["error"] == "invalid_argument");
    CHECK(r.header("Connection") == "close");
    CHECK(conn.read_until_close(5s).closed);
  }
  SUBCASE("chunked body growing past the limit") {
    HttpConnection conn;
    REQUIRE(conn.connect(kHost, s.port));
    std::string chunk(600, 'y');
    std::string req = "POST /v1/runs/1/events HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 3; ++i) req += "258\r\n" + chunk + "\r\n";  // 0x258 = 600
    req += "0\r\n\r\n";
    REQUIRE(conn.send_raw(req));
    auto raw = conn.read_until_close(5s);
    CHECK(raw.closed);
    CHECK(raw.data.rfind("HTTP/1.1 413", 0) == 0);
  }
  SUBCASE("chunked body within the limit is accepted") {
    HttpConnection conn;
    REQUIRE(conn.connect(kHost, s.port));
    REQUIRE(conn.send_raw("POST /v1/runs/1/events HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                          "Connection: close\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"));
    auto raw = conn.read_until_close(5s);
    CHECK(raw.data.rfind("HTTP/1.1 201", 0) == 0);
    CHECK(contains(raw.data, R"("body":"abcde")"));
  }
  SUBCASE("headers over the limit get 431") {
    HttpConnection conn;
    REQUIRE(conn.connect(kHost, s.port));
    REQUIRE(conn.send_raw("GET /v1/runs/1 HTTP/1.1\r\nX-Big: " + std::string(20000, 'z') + "\r\n\r\n"));
    CHECK(conn.read_until_close(5s).data.rfind("HTTP/1.1 431", 0) == 0);
  }
  auto after = http_call(kHost, s.port, "GET", "/v1/runs/7");
  CHECK(after.status == 200);
}

TEST_CASE("server: handler errors become 500 and the server survives") {
  TestServer s;
  HttpConnection conn;
  REQUIRE(conn.connect(kHost, s.port));
  auto thrown = conn.call("GET", "/throw");
  CHECK(thrown.status == 500);
  CHECK(thrown.json()["error"] == "internal");
  CHECK(contains(thrown.json()["detail"].get<std::string>(), "handler exploded"));

  auto bad_status = conn.call("GET", "/bad-status");
  CHECK(bad_status.status == 500);
  auto bad_header = conn.call("GET", "/bad-header");
  CHECK(bad_header.status == 500);
  CHECK(bad_header.header("Injected") == "");

  auto same_conn = conn.call("GET", "/v1/runs/1");  // the connection itself is still usable
  CHECK(same_conn.status == 200);
  CHECK(http_call(kHost, s.port, "GET", "/v1/runs/2").status == 200);
}

TEST_CASE("server: a stalled half request is closed by the read deadline") {
  TestServer s;  // read_timeout 1 s
  HttpConnection conn;
  REQUIRE(conn.connect(kHost, s.port));
  REQUIRE(conn.send_raw("GET /v1/runs/1 HTTP/1.1\r\nHost: x\r\n"));  // no blank line: never completes
  auto raw = conn.read_until_close(10s);
  CHECK(raw.closed);
  CHECK(raw.data.empty());
  CHECK(http_call(kHost, s.port, "GET", "/v1/runs/2").status == 200);
}

TEST_CASE("server: a connection that never sends is closed by the read deadline") {
  TestServer s;
  HttpConnection conn;
  REQUIRE(conn.connect(kHost, s.port));
  CHECK(conn.read_until_close(10s).closed);
}

TEST_CASE("server: an idle keep-alive connection is closed after idle_timeout") {
  TestServer s;  // idle_timeout 1 s
  HttpConnection conn;
  REQUIRE(conn.connect(kHost, s.port));
  REQUIRE(conn.call("GET", "/v1/runs/1").status == 200);
  auto raw = conn.read_until_close(10s);
  CHECK(raw.closed);
  CHECK(raw.data.empty());
}

TEST_CASE("server: stop() closes open connections and io_context::run() returns") {
  ServerOptions opts = test_options();
  opts.read_timeout = 60s;  // so that only stop() can end these connections
  opts.idle_timeout = 60s;
  TestServer s(opts);

  HttpConnection idle;
  REQUIRE(idle.connect(kHost, s.port));
  REQUIRE(idle.call("GET", "/v1/runs/1").status == 200);
  HttpConnection half;
  REQUIRE(half.connect(kHost, s.port));
  REQUIRE(half.send_raw("POST /v1/runs/1/events HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc"));

  CHECK(s.stop_and_wait(10s));
  CHECK(idle.read_until_close(5s).closed);
  CHECK(half.read_until_close(5s).closed);
  s.server->stop();  // a second stop is harmless

  HttpConnection late;
  CHECK_FALSE(late.connect(kHost, s.port));
}

TEST_CASE("server: stop() during a handler lets it finish but sends nothing") {
  TestServer s;
  HttpConnection conn;
  REQUIRE(conn.connect(kHost, s.port));
  REQUIRE(conn.send_raw("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::this_thread::sleep_for(50ms);  // let the handler start; if it has not, stop() still closes the socket
  CHECK(s.stop_and_wait(10s));
  auto raw = conn.read_until_close(5s);
  CHECK(raw.closed);
  CHECK(raw.data.empty());
}

TEST_CASE("server: listen errors are values") {
  asio::io_context io;
  Router router;
  HttpServer first(io, router);
  auto port = first.listen(kHost, 0);
  REQUIRE(port.ok());
  CHECK(first.listen(kHost, 0).code() == Code::already_exists);

  HttpServer clash(io, router);
  auto taken = clash.listen(kHost, *port);
  CHECK(taken.code() == Code::unavailable);

  HttpServer nowhere(io, router);
  CHECK(nowhere.listen("no-such-host.invalid", 0).code() == Code::invalid_argument);

  HttpServer stopped(io, router);
  stopped.stop();
  io.poll();
  CHECK(stopped.listen(kHost, 0).code() == Code::cancelled);

  first.stop();
  io.run();  // returns: the accept loop ends
}

TEST_CASE("server: at max_connections a new connection closes the one idle longest, and is served") {
  ServerOptions opts = test_options();
  opts.max_connections = 2;
  opts.idle_timeout = 60s;
  opts.read_timeout = 60s;
  TestServer s(opts);
  HttpConnection oldest, newer;
  REQUIRE(oldest.connect(kHost, s.port));
  REQUIRE(oldest.call("GET", "/v1/runs/1").status == 200);  // kept alive, idle from here
  REQUIRE(newer.connect(kHost, s.port));
  REQUIRE(newer.call("GET", "/v1/runs/2").status == 200);
  REQUIRE(s.server->connection_count() == 2);

  HttpConnection third;
  REQUIRE(third.connect(kHost, s.port));
  CHECK(third.call("GET", "/v1/runs/3").status == 200);
  CHECK(oldest.read_until_close(10s).closed);                // it made room
  CHECK(newer.call("GET", "/v1/runs/4").status == 200);      // the newer idle one was kept
}

TEST_CASE("server: at max_connections with none idle, a new connection is answered 503 and closed") {
  ServerOptions opts = test_options();
  opts.max_connections = 2;
  opts.read_timeout = 60s;
  TestServer s(opts);
  hold().release = false;
  std::vector<std::thread> busy;
  std::atomic<int> answered{0};
  for (int i = 0; i < 2; ++i)
    busy.emplace_back([&] { answered += http_call(kHost, s.port, "GET", "/hold").status == 200; });
  const auto end = std::chrono::steady_clock::now() + 30s;
  while (hold().holding < 2 && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(5ms);
  REQUIRE(hold().holding == 2);

  auto refused = http_call(kHost, s.port, "GET", "/v1/runs/1");
  CHECK(refused.status == 503);
  CHECK(refused.header("Retry-After") == "1");
  CHECK(refused.json()["error"] == "unavailable");
  hold().release = true;
  for (auto& t : busy) t.join();
  CHECK(answered == 2);  // the busy ones were never cut
  CHECK(http_call(kHost, s.port, "GET", "/v1/runs/1").status == 200);
}
