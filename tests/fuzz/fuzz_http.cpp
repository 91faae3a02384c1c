// The HTTP/1.1 server as tsumd runs it (api/http/http_server.h: Beast's parser under our limits, targets, the
// router, in-memory and to-file bodies, Range on files, pipelining, keep-alive), fed each input as the bytes a
// client sends on one loopback connection. The client then half-closes and reads until the server closes: a
// server that has not closed within 10 s has broken its deadline contract, and that is a finding too.
#include <signal.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "api/http/http_server.h"
#include "fuzz_input.h"

namespace asio = boost::asio;
using namespace tsum::api;

namespace {

struct Server {
  asio::io_context io;
  Router router;
  std::unique_ptr<HttpServer> server;
  std::uint16_t port = 0;
  std::string dir;
  std::thread thread;

  Server() {
    ::signal(SIGPIPE, SIG_IGN);
    dir = "/tmp/tsum-fuzz-http-" + std::to_string(::getpid());
    std::filesystem::create_directories(dir + "/uploads");
    std::ofstream(dir + "/file.bin") << std::string(4096, 'x');
    router.add("GET", "/healthz", [](Request&) -> asio::awaitable<Response> {
      co_return json_response(200, {{"ok", true}});
    });
    router.add("GET", "/v1/runs/{id}", [](Request& req) -> asio::awaitable<Response> {
      co_return json_response(200, {{"id", req.params.at("id")}, {"path", req.path}, {"query", req.query}});
    });
    router.add("POST", "/v1/runs/{id}/events", [](Request& req) -> asio::awaitable<Response> {
      auto j = nlohmann::json::parse(req.body, nullptr, false);
      if (j.is_discarded()) co_return error_response(400, "invalid_argument", "not JSON");
      co_return json_response(201, {{"id", req.params.at("id")}, {"body", j}, {"ua", req.header("user-agent")}});
    });
    router.add("PUT", "/v1/datasets/{name}", [](Request& req) -> asio::awaitable<Response> {
      co_return json_response(201, {{"name", req.params.at("name")}, {"file", !req.body_file.empty()}});
    }, {.body_to_file = true, .body_limit = 64 << 10});
    const std::string file = dir + "/file.bin";
    router.add("GET", "/v1/file", [file](Request& req) -> asio::awaitable<Response> {
      co_return file_response(req, file, "application/octet-stream");
    });
    ServerOptions opts;
    opts.body_limit = 64 << 10;
    opts.header_limit = 8 << 10;
    opts.read_timeout = std::chrono::seconds(5);
    opts.idle_timeout = std::chrono::seconds(5);
    opts.write_timeout = std::chrono::seconds(5);
    opts.upload_dir = dir + "/uploads";
    server = std::make_unique<HttpServer>(io, router, opts);
    auto bound = server->listen("127.0.0.1", 0);
    if (!bound.ok()) __builtin_trap();
    port = *bound;
    thread = std::thread([this] {
      auto guard = asio::make_work_guard(io);
      io.run();
    });
    thread.detach();  // lives as long as the process
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Server* s = new Server;
  asio::io_context io;
  asio::ip::tcp::socket sock(io);
  boost::system::error_code ec;
  // Each connection from its own loopback source address: the server closes first, so every connection leaves
  // a TIME_WAIT entry for 60 s, and from one source the ephemeral ports run out after some 28,000 of them.
  // A blocking connect that libFuzzer's own timer signal interrupts (EINTR; once in some 40,000 connections
  // here) goes on with a fresh socket.
  static std::uint32_t n = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (sock.is_open()) sock.close(ec);
    sock.open(asio::ip::tcp::v4());
    sock.bind({asio::ip::address_v4(0x7F000002u + n++ % 0xFFFFF0u), 0}, ec);
    if (!ec) sock.connect({asio::ip::make_address("127.0.0.1"), s->port}, ec);
    if (ec != asio::error::interrupted) break;
  }
  if (ec) {  // the server stopped accepting
    std::fprintf(stderr, "fuzz_http: connect: %s\n", ec.message().c_str());
    __builtin_trap();
  }
  timeval tv{10, 0};
  ::setsockopt(sock.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(sock.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  asio::write(sock, asio::buffer(data, size), ec);  // the server may close early (a 4xx): that is fine
  sock.shutdown(asio::ip::tcp::socket::shutdown_send, ec);
  char buf[16 << 10];
  std::size_t got = 0;
  std::string head;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const ssize_t n = ::recv(sock.native_handle(), buf, sizeof buf, 0);
    if (n > 0) {
      if (head.size() < 9) head.append(buf, std::min<std::size_t>(9 - head.size(), static_cast<std::size_t>(n)));
      got += static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0 || errno == ECONNRESET) break;
    if (errno == EINTR) continue;
    if (std::chrono::steady_clock::now() - start >= std::chrono::seconds(10)) __builtin_trap();  // never closed
    break;
  }
  if (got > 0 && head != "HTTP/1.1 " && head != "HTTP/1.0 ") __builtin_trap();  // whatever it says is HTTP
  return 0;
}
