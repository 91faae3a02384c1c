// Shared fixture for the HttpServer tests: a server with test routes on 127.0.0.1:<ephemeral>, its
// io_context running on a background thread. Deadlines in these tests are generous upper bounds.
#pragma once

#include <doctest/doctest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "api/http/http_client.h"
#include "api/http/http_server.h"
#include "support/temp_dir.h"

namespace tsum::api::testing {

using namespace std::chrono_literals;
namespace asio = boost::asio;

inline constexpr const char* kHost = "127.0.0.1";

// GET /hold: counts itself in `holding`, then answers once `release` is set (a bounded wait): a request the test
// keeps busy for as long as it needs, without sleeping past a guess.
struct Hold {
  std::atomic<int> holding{0};
  std::atomic<bool> release{false};
};
inline Hold& hold() {
  static Hold h;
  return h;
}

inline void add_test_routes(Router& router) {
  router.add("GET", "/hold", [](Request&) -> asio::awaitable<Response> {
    ++hold().holding;
    asio::steady_timer timer(co_await asio::this_coro::executor);
    for (int i = 0; i < 60000 && !hold().release; ++i) {  // released by the test; 5 minutes at most
      timer.expires_after(5ms);
      co_await timer.async_wait(asio::use_awaitable);
    }
    --hold().holding;
    co_return json_response(200, {{"held", true}});
  });
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
  // Which thread ran the handler: a route as usual, and one that may run on any thread.
  const auto thread_route = [](Request&) -> asio::awaitable<Response> {
    co_return json_response(200, {{"thread", std::hash<std::thread::id>{}(std::this_thread::get_id())}});
  };
  router.add("GET", "/thread", thread_route);
  router.add("GET", "/thread-any", thread_route, {.any_thread = true});
  router.add("GET", "/stream-thread", [](Request&) -> asio::awaitable<Response> {
    Response res;
    res.content_type = "text/event-stream";
    res.streamer = [](StreamWriter& out) -> asio::awaitable<void> {
      const auto id = std::hash<std::thread::id>{}(std::this_thread::get_id());
      (void)co_await out.write("data: " + std::to_string(id) + "\n\n", 5s);
    };
    co_return res;
  });
  router.add("GET", "/stream", [](Request&) -> asio::awaitable<Response> {
    Response res;
    res.content_type = "text/event-stream";
    res.headers.emplace_back("Cache-Control", "no-cache");
    res.streamer = [](StreamWriter& out) -> asio::awaitable<void> {
      for (const char* event : {"data: 1\n\n", "data: 2\n\n"}) {
        if (!co_await out.write(event, 5s)) co_return;
      }
    };
    co_return res;
  });
}

// Upload and download routes over `kept_dir`:
//   PUT /upload/{name}    body streamed to a file; the handler moves it to kept_dir/name, except for
//                         name "discard" (left where it is, for the server to remove). Answers
//                         {"size", "body_empty", "in_upload_dir"}.
//   PUT /limited          body to a file, route limit 4096 bytes
//   POST /memory          in memory, route limit 4096 bytes (the server's body_limit is 1024)
//   GET /files/{name}     file_response(kept_dir/name)
//   GET /raw-file/{name}  Response::file with ?offset=&length= as given (no checks), for broken file bodies
inline void add_file_routes(Router& router, const std::string& kept_dir, const std::string& upload_dir) {
  auto upload = [kept_dir, upload_dir](Request& req) -> asio::awaitable<Response> {
    if (req.body_file.empty()) co_return error_response(500, "internal", "no body_file");
    std::error_code ec;
    const auto size = std::filesystem::file_size(req.body_file, ec);
    const bool in_upload_dir = std::filesystem::path(req.body_file).parent_path() == upload_dir;
    const std::string name = req.params.count("name") ? req.params.at("name") : "discard";
    if (name != "discard") std::filesystem::rename(req.body_file, kept_dir + "/" + name, ec);
    if (ec) co_return error_response(500, "internal", ec.message());
    co_return json_response(200, {{"size", size}, {"body_empty", req.body.empty()}, {"in_upload_dir", in_upload_dir}});
  };
  router.add("PUT", "/upload/{name}", upload, {.body_to_file = true});
  router.add("PUT", "/limited", upload, {.body_to_file = true, .body_limit = 4096});
  router.add("POST", "/memory", [](Request& req) -> asio::awaitable<Response> {
    co_return json_response(200, {{"size", req.body.size()}, {"body_file", req.body_file}});
  }, {.body_limit = 4096});
  router.add("GET", "/files/{name}", [kept_dir](Request& req) -> asio::awaitable<Response> {
    co_return file_response(req, kept_dir + "/" + req.params.at("name"), "application/octet-stream");
  });
  router.add("GET", "/raw-file/{name}", [kept_dir](Request& req) -> asio::awaitable<Response> {
    Response res;
    res.content_type = "application/octet-stream";
    res.file = FileBody{kept_dir + "/" + req.params.at("name"), std::stoull(req.query["offset"]),
                        std::stoull(req.query["length"])};
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

// Whether this run of the suite puts the servers' connections on a network thread of their own, the routes on
// the handlers' io_context (HttpServer's `network`, as tsumd serve does): TSUM_TEST_NETWORK_THREAD=1. CTest runs
// the suite both ways (api and api_network).
inline bool network_thread_mode() {
  const char* v = std::getenv("TSUM_TEST_NETWORK_THREAD");
  return v && std::string_view(v) == "1";
}

// A server on 127.0.0.1:<ephemeral>, its io_context running on a background thread (and, in network-thread
// mode, its connections on two more).
struct TestServer {
  explicit TestServer(ServerOptions opts = test_options()) {
    if (opts.upload_dir.empty()) opts.upload_dir = files.file("uploads");
    upload_dir = opts.upload_dir;
    kept_dir = files.file("kept");
    std::filesystem::create_directories(kept_dir);
    add_test_routes(router);
    add_file_routes(router, kept_dir, upload_dir);
    const bool network = network_thread_mode();
    server = std::make_unique<HttpServer>(io, router, std::move(opts),
                                          network ? std::vector<asio::io_context*>{&nets[0], &nets[1]}
                                                  : std::vector<asio::io_context*>{});
    auto bound = server->listen(kHost, 0);
    REQUIRE(bound.ok());
    server->accept();
    port = *bound;
    finished = ran.get_future();
    if (network) {
      io_work.emplace(io.get_executor());  // the handlers' loop waits for routes to run
      for (int i = 0; i < 2; ++i) {  // two, as on a 2-core machine; connections alternate between them
        net_work[i].emplace(nets[i].get_executor());
        net_threads[i] = std::thread([this, i] { nets[i].run(); });
      }
    }
    thread = std::thread([this] {
      io.run();
      ran.set_value();
    });
  }

  // Calls stop() and reports whether the server wound down within `timeout`: io_context::run() returned or, in
  // network-thread mode, every connection closed (so no route is left running).
  bool stop_and_wait(std::chrono::seconds timeout = 10s) {
    server->stop();
    if (!io_work) return finished.wait_for(timeout) == std::future_status::ready;
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (server->connection_count() != 0 && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(5ms);
    if (server->connection_count() != 0) return false;
    io_work.reset();
    return finished.wait_for(timeout) == std::future_status::ready;
  }

  ~TestServer() {
    if (!stop_and_wait()) io.stop();
    thread.join();
    for (int i = 0; i < 2; ++i) {
      net_work[i].reset();
      nets[i].stop();
      if (net_threads[i].joinable()) net_threads[i].join();
    }
    server.reset();
  }

  // Number of files in the upload directory (0 when it does not exist yet).
  std::size_t upload_files() const {
    std::error_code ec;
    std::size_t n = 0;
    for (std::filesystem::directory_iterator it(upload_dir, ec), end; !ec && it != end; it.increment(ec)) ++n;
    return n;
  }

  // Waits (bounded) until the upload directory is empty: the server removes leftovers after the response.
  bool uploads_cleared(std::chrono::milliseconds limit = 5000ms) const {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (upload_files() != 0 && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(10ms);
    return upload_files() == 0;
  }

  tsum::testing::TempDir files{"tsum-api"};
  std::string upload_dir;
  std::string kept_dir;
  Router router;
  asio::io_context nets[2];  // network-thread mode: the connections' loops; outlive `io`, as HttpServer requires
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> net_work[2];
  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> io_work;
  std::unique_ptr<HttpServer> server;
  std::uint16_t port = 0;
  std::promise<void> ran;
  std::future<void> finished;
  std::thread thread;
  std::thread net_threads[2];
};

// The URL of `path` on the test server.
inline std::string url(const TestServer& s, const std::string& path) {
  return "http://127.0.0.1:" + std::to_string(s.port) + path;
}

// The bytes of a file; empty when it cannot be read.
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline bool contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

// What a shell command printed on stdout, and its exit status.
struct CommandResult {
  int status = -1;
  std::string out;
};

// Runs `command` with /bin/sh (bounded by `timeout`(1), which must be on PATH) and captures its stdout.
inline CommandResult run_command(const std::string& command, int timeout_s = 60) {
  CommandResult result;
  FILE* pipe = ::popen(("timeout " + std::to_string(timeout_s) + " " + command).c_str(), "r");
  if (pipe == nullptr) return result;
  char chunk[4096];
  for (std::size_t n; (n = std::fread(chunk, 1, sizeof chunk, pipe)) > 0;) result.out.append(chunk, n);
  const int status = ::pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// FAILs the test unless the curl command line is installed.
inline void require_curl() {
  REQUIRE_MESSAGE(run_command("curl --version >/dev/null 2>&1").status == 0,
                  "these tests need the curl command line: apt-get install curl");
}

// Writes `size` bytes of a deterministic pattern to `path`, 1 MiB at a time.
inline void write_pattern_file(const std::string& path, std::uint64_t size) {
  std::string block(1 << 20, '\0');
  for (std::size_t i = 0; i < block.size(); ++i) block[i] = static_cast<char>((i * 131 + i / 4099) & 0xff);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  for (std::uint64_t left = size; left > 0;) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, block.size()));
    out.write(block.data(), static_cast<std::streamsize>(n));
    left -= n;
  }
  REQUIRE(out.good());
}

// True when both files exist and hold the same bytes (compared 1 MiB at a time).
inline bool same_file(const std::string& a, const std::string& b) {
  std::ifstream fa(a, std::ios::binary);
  std::ifstream fb(b, std::ios::binary);
  if (!fa || !fb) return false;
  std::string ba(1 << 20, '\0');
  std::string bb(1 << 20, '\0');
  while (fa && fb) {
    fa.read(ba.data(), static_cast<std::streamsize>(ba.size()));
    fb.read(bb.data(), static_cast<std::streamsize>(bb.size()));
    if (fa.gcount() != fb.gcount() || ba.compare(0, fa.gcount(), bb, 0, fb.gcount()) != 0) return false;
  }
  return fa.eof() && fb.eof();
}

// The process's peak resident set (VmHWM) in KiB; 0 if unknown.
inline std::uint64_t peak_rss_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6));
  }
  return 0;
}

// Resets VmHWM to the current resident set (Linux >= 4.0). False if the kernel refused.
inline bool reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return clear.good();
}

}  // namespace tsum::api::testing
