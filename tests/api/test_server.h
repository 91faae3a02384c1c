// Shared fixture for the HttpServer tests: a server with test routes on 127.0.0.1:<ephemeral>, its
// io_context running on a background thread. Deadlines in these tests are generous upper bounds.
#pragma once

#include <doctest/doctest.h>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <future>
#include <memory>
#include <stdexcept>
#include <thread>

#include "api/http_server.h"
#include "api/http_client.h"

namespace tsum::api::testing {

using namespace std::chrono_literals;
namespace asio = boost::asio;

inline constexpr const char* kHost = "127.0.0.1";

inline void add_test_routes(Router& router) {
  router.add("GET", "/v1/runs/{id}", [](Request& req) -> asio::awaitable<Response> {
    co_return json_response(200, {{"id", req.params.at("id")},
                                  {"path", req.path},
                                  {"query", req.query},
                                  {"remote", req.remote}});
  });
  router.add("GET", "/v1/runs/latest", [](Request&) -> asio::awaitable<Response> {
    co_return json_response(200, {{"latest", true}});
  });
  router.add("POST", "/v1/runs/{id}/events", [](Request& req) -> asio::awaitable<Response> {
    Response res = json_response(201, {{"id", req.params.at("id")},
                                       {"body", req.body},
                                       {"content_type", req.header("content-type")}});
    res.headers.emplace_back("X-Echo", "yes");
    co_return res;
  });
  router.add("GET", "/throw", [](Request&) -> asio::awaitable<Response> {
    throw std::runtime_error("handler exploded");
    co_return Response{};
  });
  router.add("GET", "/bad-status", [](Request&) -> asio::awaitable<Response> {
    Response res;
    res.status = 42;
    co_return res;
  });
  router.add("GET", "/bad-header", [](Request&) -> asio::awaitable<Response> {
    Response res;
    res.headers.emplace_back("X-Split", "a\r\nInjected: 1");
    co_return res;
  });
  router.add("GET", "/no-content", [](Request&) -> asio::awaitable<Response> {
    Response res;
    res.status = 204;
    res.body = "ignored";
    co_return res;
  });
  router.add("GET", "/close", [](Request&) -> asio::awaitable<Response> {
    Response res = json_response(200, {{"bye", true}});
    res.close = true;
    co_return res;
  });
  router.add("GET", "/slow", [](Request&) -> asio::awaitable<Response> {
    asio::steady_timer timer(co_await asio::this_coro::executor, 300ms);
    co_await timer.async_wait(asio::use_awaitable);
    co_return json_response(200, {{"slow", true}});
  });
  router.add("GET", "/stream", [](Request&) -> asio::awaitable<Response> {
    Response res;
    res.content_type = "text/event-stream";
    res.headers.emplace_back("Cache-Control", "no-cache");
    res.streamer = [](boost::beast::tcp_stream& stream) -> asio::awaitable<void> {
      for (const char* event : {"data: 1\n\n", "data: 2\n\n"}) {
        stream.expires_after(5s);
        auto [ec, n] = co_await asio::async_write(stream, asio::buffer(std::string_view(event)),
                                                  asio::as_tuple(asio::use_awaitable));
        if (ec) co_return;
      }
    };
    co_return res;
  });
}

inline ServerOptions test_options() {
  ServerOptions opts;
  opts.body_limit = 1024;
  opts.read_timeout = 1s;
  opts.write_timeout = 5s;
  opts.idle_timeout = 1s;
  opts.server_name = "tsumd-test";
  return opts;
}

// A server on 127.0.0.1:<ephemeral>, its io_context running on a background thread.
struct TestServer {
  explicit TestServer(ServerOptions opts = test_options()) {
    add_test_routes(router);
    server = std::make_unique<HttpServer>(io, router, std::move(opts));
    auto bound = server->listen(kHost, 0);
    REQUIRE(bound.ok());
    port = *bound;
    finished = ran.get_future();
    thread = std::thread([this] {
      io.run();
      ran.set_value();
    });
  }

  // Calls stop() and reports whether io_context::run() returned within `timeout`.
  bool stop_and_wait(std::chrono::seconds timeout = 10s) {
    server->stop();
    return finished.wait_for(timeout) == std::future_status::ready;
  }

  ~TestServer() {
    if (!stop_and_wait()) io.stop();
    thread.join();
    server.reset();
  }

  Router router;
  asio::io_context io;
  std::unique_ptr<HttpServer> server;
  std::uint16_t port = 0;
  std::promise<void> ran;
  std::future<void> finished;
  std::thread thread;
};

inline bool contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace tsum::api::testing
