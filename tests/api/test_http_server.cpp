// HttpServer over real loopback sockets: routing, headers, keep-alive, pipelining, 100-continue, streaming.
#include "tests/api/test_server.h"

using namespace tsum;
using namespace tsum::api;
using namespace tsum::api::testing;
using tsum::api::HttpConnection;
using tsum::api::http_call;

TEST_CASE("server: router params, query and specificity over HTTP") {
  TestServer s;
  auto r = http_call(kHost, s.port, "GET", "/v1/runs/5?x=1&name=a+b");
  REQUIRE(r.ok());
  CHECK(r.status == 200);
  auto body = r.json();
  CHECK(body["id"] == "5");
  CHECK(body["path"] == "/v1/runs/5");
  CHECK(body["query"]["x"] == "1");
  CHECK(body["query"]["name"] == "a b");
  CHECK(contains(body["remote"].get<std::string>(), "127.0.0.1:"));

  auto latest = http_call(kHost, s.port, "GET", "/v1/runs/latest");
  CHECK(latest.json()["latest"] == true);

  auto posted = http_call(kHost, s.port, "POST", "/v1/runs/9/events", R"({"phase":"learn"})",
                          {{"Content-Type", "application/json"}});
  CHECK(posted.status == 201);
  CHECK(posted.header("x-echo") == "yes");
  CHECK(posted.json()["body"] == R"({"phase":"learn"})");
  CHECK(posted.json()["content_type"] == "application/json");
}

TEST_CASE("server: 404 unknown path, 405 wrong method with Allow") {
  TestServer s;
  auto missing = http_call(kHost, s.port, "GET", "/nope");
  CHECK(missing.status == 404);
  CHECK(missing.json()["error"] == "not_found");

  auto wrong = http_call(kHost, s.port, "DELETE", "/v1/runs/5");
  CHECK(wrong.status == 405);
  CHECK(wrong.header("Allow") == "GET");
  CHECK(wrong.json()["error"] == "invalid_argument");

  auto bad_escape = http_call(kHost, s.port, "GET", "/v1/runs/%zz");
  CHECK(bad_escape.status == 400);
  CHECK(bad_escape.json()["error"] == "invalid_argument");
}

TEST_CASE("server: every response has Content-Type, Content-Length and Server") {
  TestServer s;
  for (const char* target : {"/v1/runs/1", "/nope", "/throw"}) {
    auto r = http_call(kHost, s.port, "GET", target);
    REQUIRE(r.ok());
    CHECK(r.header("Content-Type") == "application/json");
    CHECK(r.header("Content-Length") == std::to_string(r.body.size()));
    CHECK(r.header("Server") == "tsumd-test");
  }
  auto empty = http_call(kHost, s.port, "GET", "/no-content");
  CHECK(empty.status == 204);
  CHECK(empty.body.empty());
  CHECK(empty.header("Server") == "tsumd-test");
}

TEST_CASE("server: keep-alive serves two requests on one connection") {
  TestServer s;
  HttpConnection conn;
  REQUIRE(conn.connect(kHost, s.port));
  auto first = conn.call("GET", "/v1/runs/1");
  auto second = conn.call("GET", "/v1/runs/2");
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  CHECK(first.json()["id"] == "1");
  CHECK(second.json()["id"] == "2");
  CHECK(first.json()["remote"] == second.json()["remote"]);  // same client socket
  CHECK(first.header("Connection") != "close");
}

TEST_CASE("server: Connection: close, HTTP/1.0 and Response::close end the connection") {
  TestServer s;
  {
    HttpConnection conn;
    REQUIRE(conn.connect(kHost, s.port));
    auto r = conn.call("GET", "/v1/runs/1", "", {{"Connection", "close"}});
    CHECK(r.status == 200);
    CHECK(r.header("Connection") == "close");
    CHECK(conn.read_until_close(5s).closed);
  }
  {
    HttpConnection conn;
    REQUIRE(conn.connect(kHost, s.port));
    REQUIRE(conn.send_raw("GET /v1/runs/1 HTTP/1.0\r\n\r\n"));
    auto raw = conn.read_until_close(5s);
    CHECK(raw.closed);
    CHECK(raw.data.rfind("HTTP/1.0 200", 0) == 0);
  }
  {
    HttpConnection conn;
    REQUIRE(conn.connect(kHost, s.port));
    auto r = conn.call("GET", "/close");
    CHECK(r.status == 200);
    CHECK(conn.read_until_close(5s).closed);
  }
}

TEST_CASE("server: pipelined requests are answered in order") {
  TestServer s;
  HttpConnection conn;
  REQUIRE(conn.connect(kHost, s.port));
  REQUIRE(conn.send_raw("GET /v1/runs/a HTTP/1.1\r\nHost: x\r\n\r\n"
                        "GET /v1/runs/b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  auto raw = conn.read_until_close(5s);
  CHECK(raw.closed);
  auto a = raw.data.find(R"("id":"a")");
  auto b = raw.data.find(R"("id":"b")");
  CHECK(a != std::string::npos);
  CHECK(b != std::string::npos);
  CHECK(a < b);
}

TEST_CASE("server: Expect: 100-continue gets an interim response") {
  TestServer s;
  HttpConnection conn;
  REQUIRE(conn.connect(kHost, s.port));
  REQUIRE(conn.send_raw("POST /v1/runs/3/events HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                        "Expect: 100-continue\r\nConnection: close\r\n\r\n"));
  auto interim = conn.read_for(500ms);
  CHECK(interim.data.rfind("HTTP/1.1 100 Continue\r\n\r\n", 0) == 0);
  REQUIRE(conn.send_raw("hello"));
  auto raw = conn.read_until_close(5s);
  CHECK(contains(interim.data + raw.data, "HTTP/1.1 201"));
  CHECK(contains(raw.data, R"("body":"hello")"));
}

TEST_CASE("server: a streaming response writes its head, then the streamer's bytes, then closes") {
  TestServer s;
  HttpConnection conn;
  REQUIRE(conn.connect(kHost, s.port));
  REQUIRE(conn.send_raw("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n"));
  auto raw = conn.read_until_close(5s);
  CHECK(raw.closed);
  CHECK(raw.data.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(contains(raw.data, "Content-Type: text/event-stream\r\n"));
  CHECK(contains(raw.data, "Cache-Control: no-cache\r\n"));
  CHECK(contains(raw.data, "Server: tsumd-test\r\n"));
  CHECK_FALSE(contains(raw.data, "Content-Length"));
  CHECK(contains(raw.data, "\r\n\r\ndata: 1\n\ndata: 2\n\n"));
}

TEST_CASE("server: routes run on the handlers' loop, any_thread routes and the connection itself on the network "
          "thread when there is one; a stream is written from the handlers' loop") {
  TestServer s;
  const auto id = [](const std::thread& t) { return std::hash<std::thread::id>{}(t.get_id()); };
  const auto handlers = id(s.thread);
  auto routed = http_call(kHost, s.port, "GET", "/thread");
  auto any = http_call(kHost, s.port, "GET", "/thread-any");
  REQUIRE(routed.status == 200);
  REQUIRE(any.status == 200);
  CHECK(routed.json()["thread"] == handlers);
  auto streamed = http_call(kHost, s.port, "GET", "/stream-thread");
  REQUIRE(streamed.status == 200);
  CHECK(streamed.body == "data: " + std::to_string(handlers) + "\n\n");
  if (network_thread_mode()) {
    const auto on = any.json()["thread"].get<std::size_t>();
    CHECK((on == id(s.net_threads[0]) || on == id(s.net_threads[1])));
  } else {
    CHECK(any.json()["thread"] == handlers);
  }
  // Keep-alive across the hop: several requests on one connection, each answered in order.
  HttpConnection conn;
  REQUIRE(conn.connect(kHost, s.port));
  for (int i = 0; i < 5; ++i) {
    auto r = conn.call("GET", i % 2 ? "/thread-any" : "/v1/runs/" + std::to_string(i));
    REQUIRE(r.status == 200);
    if (i % 2 == 0) CHECK(r.json()["id"] == std::to_string(i));
  }
}
