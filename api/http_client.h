// Tiny synchronous HTTP/1.1 client (header-only), used by the quickstart and the tests. Every operation has a deadline, so a broken
// server fails a test instead of hanging it.
//
//   auto r = tsum::api::http_call("127.0.0.1", port, "POST", "/v1/runs", R"({"x":1})",
//                                  {{"Content-Type", "application/json"}});
//   CHECK(r.status == 201);
//
// HttpConnection keeps one connection open across calls (keep-alive) and can send raw bytes, for malformed-input
// tests. Internally each call runs a private io_context until the operation completes or times out.
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
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
  std::string header(std::string_view name) const {
    for (const auto& [k, v] : headers) {
      if (boost::beast::iequals(k, name)) return v;
    }
    return {};
  }
  // Body parsed as JSON; a discarded value (is_discarded()) when it is not JSON.
  nlohmann::json json() const { return nlohmann::json::parse(body, nullptr, false); }
};

// What read_until_close() saw.
struct RawRead {
  std::string data;        // every byte received
  bool closed = false;     // true: the peer closed (EOF or reset); false: the deadline passed first
};

class HttpConnection {
 public:
  explicit HttpConnection(std::chrono::milliseconds timeout = std::chrono::seconds(10))
      : stream_(io_), timeout_(timeout) {}

  // Connects to host:port. False on failure; see last_error().
  bool connect(const std::string& host, std::uint16_t port) {
    run([this, host, port]() -> boost::asio::awaitable<void> {
      boost::asio::ip::tcp::resolver resolver(io_);
      auto [rec, endpoints] = co_await resolver.async_resolve(host, std::to_string(port), kTuple);
      if (rec) {
        error_ = "resolve: " + rec.message();
        co_return;
      }
      stream_.expires_after(timeout_);
      auto [ec, ep] = co_await stream_.async_connect(endpoints, kTuple);
      error_ = ec ? "connect: " + ec.message() : "";
    });
    return error_.empty();
  }

  // Sends one request and reads one response on this connection. Adds Host and, when there is a body and
  // no Content-Length/Transfer-Encoding in `headers`, Content-Length.
  HttpResult call(const std::string& method, const std::string& target, const std::string& body = "",
                  const Headers& headers = {}) {
    namespace http = boost::beast::http;
    http::request<http::string_body> req;
    req.method_string(method);
    req.target(target);
    req.version(11);
    req.set(http::field::host, "127.0.0.1");
    bool framed = false;
    for (const auto& [k, v] : headers) {
      req.insert(boost::beast::string_view(k), v);
      framed = framed || boost::beast::iequals(k, "content-length") || boost::beast::iequals(k, "transfer-encoding");
    }
    req.body() = body;
    if (!framed && !body.empty()) req.content_length(body.size());

    HttpResult out;
    run([&]() -> boost::asio::awaitable<void> {
      stream_.expires_after(timeout_);
      auto [wec, wn] = co_await http::async_write(stream_, req, kTuple);
      if (wec) {
        out.error = "write: " + wec.message();
        co_return;
      }
      http::response_parser<http::string_body> parser;
      parser.body_limit(64u << 20);
      stream_.expires_after(timeout_);
      auto [rec, rn] = co_await http::async_read(stream_, buffer_, parser, kTuple);
      if (rec) {
        out.error = "read: " + rec.message();
        co_return;
      }
      const auto& res = parser.get();
      out.status = static_cast<int>(res.result_int());
      for (const auto& f : res) out.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
      out.body = res.body();
    });
    return out;
  }

  // Sends raw bytes. False on failure.
  bool send_raw(std::string_view bytes) {
    bool ok = false;
    run([&]() -> boost::asio::awaitable<void> {
      stream_.expires_after(timeout_);
      auto [ec, n] = co_await boost::asio::async_write(stream_, boost::asio::buffer(bytes.data(), bytes.size()), kTuple);
      ok = !ec;
    });
    return ok;
  }

  // Reads until the peer closes or `timeout` passes, whichever is first. A timeout leaves the connection
  // open and usable.
  RawRead read_until_close(std::chrono::milliseconds timeout) {
    RawRead out;
    out.data.assign(static_cast<const char*>(buffer_.data().data()), buffer_.size());
    buffer_.consume(buffer_.size());
    boost::asio::steady_timer timer(io_, timeout);
    timer.async_wait([this](boost::beast::error_code ec) {
      if (!ec) stream_.socket().cancel();  // deadline: abort the read, keep the socket
    });
    run([&]() -> boost::asio::awaitable<void> {
      stream_.expires_never();
      char chunk[4096];
      while (true) {
        auto [ec, n] = co_await stream_.async_read_some(boost::asio::buffer(chunk), kTuple);
        out.data.append(chunk, n);
        if (ec) {
          out.closed = ec != boost::asio::error::operation_aborted;
          break;
        }
      }
      timer.cancel();
    });
    return out;
  }

  // Reads whatever arrives within `timeout` (stops early if the peer closes). For interim responses.
  RawRead read_for(std::chrono::milliseconds timeout) { return read_until_close(timeout); }

  void close() {
    boost::beast::error_code ec;
    stream_.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    stream_.close();
  }

  const std::string& last_error() const { return error_; }

 private:
  static constexpr auto kTuple = boost::asio::as_tuple(boost::asio::use_awaitable);

  template <class F>
  void run(F&& f) {
    boost::asio::co_spawn(io_, std::forward<F>(f), boost::asio::detached);
    io_.restart();
    io_.run();
  }

  boost::asio::io_context io_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::chrono::milliseconds timeout_;
  std::string error_;
};

// One request on a fresh connection, which is closed afterwards.
inline HttpResult http_call(const std::string& host, std::uint16_t port, const std::string& method,
                            const std::string& target, const std::string& body = "", const Headers& headers = {}) {
  HttpConnection conn;
  if (!conn.connect(host, port)) {
    HttpResult out;
    out.error = conn.last_error();
    return out;
  }
  return conn.call(method, target, body, headers);
}

}  // namespace tsum::api
