// Tiny synchronous HTTP/1.1 client, used by the quickstart, the CLI and the tests. Every operation has a deadline,
// so a broken server fails a test instead of hanging it.
//
//   auto r = tsum::api::http_call("127.0.0.1", port, "POST", "/v1/runs", R"({"x":1})",
//                                  {{"Content-Type", "application/json"}});
//   CHECK(r.status == 201);
//
// HttpConnection keeps one connection open across calls (keep-alive) and can send raw bytes, for malformed-input
// tests. Internally each call runs a private io_context until the operation completes or times out.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tsum::api {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct HttpResult {
  int status = 0;          // 0 when the exchange failed; see `error`
  Headers headers;         // in arrival order
  std::string body;
  std::string error;       // "" on success, else what failed (connect/write/read: message)

  bool ok() const { return error.empty(); }
  // First header named `name` (case-insensitive), "" if absent.
  std::string header(std::string_view name) const;
  // Body parsed as JSON; a discarded value (is_discarded()) when it is not JSON.
  nlohmann::json json() const { return nlohmann::json::parse(body, nullptr, false); }
};

// What read_until_close() saw.
struct RawRead {
  std::string data;        // every byte received
  bool closed = false;     // true: the peer closed (EOF or reset); false: the deadline passed first
};

// Its Asio and Beast machinery lives in http_client.cpp, compiled once: the dozens of test files that include
// this header no longer each compile a coroutine HTTP client (30-40 s apiece).
class HttpConnection {
 public:
  explicit HttpConnection(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // Connects to host:port. False on failure; see last_error().
  bool connect(const std::string& host, std::uint16_t port);

  // Sends one request and reads one response on this connection. Adds Host and, when there is a body and
  // no Content-Length/Transfer-Encoding in `headers`, Content-Length.
  HttpResult call(const std::string& method, const std::string& target, const std::string& body = "",
                  const Headers& headers = {});

  // Sends raw bytes. False on failure.
  bool send_raw(std::string_view bytes);

  // Reads until the peer closes or `timeout` passes, whichever is first. A timeout leaves the connection
  // open and usable.
  RawRead read_until_close(std::chrono::milliseconds timeout);

  // Reads whatever arrives within `timeout` (stops early if the peer closes). For interim responses.
  RawRead read_for(std::chrono::milliseconds timeout) { return read_until_close(timeout); }

  void close();

  const std::string& last_error() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One request on a fresh connection, which is closed afterwards.
HttpResult http_call(const std::string& host, std::uint16_t port, const std::string& method,
                     const std::string& target, const std::string& body = "", const Headers& headers = {});

}  // namespace tsum::api
