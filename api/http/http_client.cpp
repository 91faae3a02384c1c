#include "api/http/http_client.h"

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

namespace tsum::api {

namespace {
constexpr auto kTuple = boost::asio::as_tuple(boost::asio::use_awaitable);
}  // namespace

std::string HttpResult::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (boost::beast::iequals(k, name)) return v;
  }
  return {};
}

struct HttpConnection::Impl {
  explicit Impl(std::chrono::milliseconds timeout) : stream(io), timeout(timeout) {}

  // Runs f as a coroutine on the private io_context until it (and whatever it started) completes.
  template <class F>
  void run(F&& f) {
    boost::asio::co_spawn(io, std::forward<F>(f), boost::asio::detached);
    io.restart();
    io.run();
  }

  boost::asio::io_context io;
  boost::beast::tcp_stream stream;
  boost::beast::flat_buffer buffer;
  std::chrono::milliseconds timeout;
  std::string error;
};

HttpConnection::HttpConnection(std::chrono::milliseconds timeout) : impl_(std::make_unique<Impl>(timeout)) {}
HttpConnection::~HttpConnection() = default;

bool HttpConnection::connect(const std::string& host, std::uint16_t port) {
  Impl& m = *impl_;
  m.run([&m, host, port]() -> boost::asio::awaitable<void> {
    boost::asio::ip::tcp::resolver resolver(m.io);
    auto [rec, endpoints] = co_await resolver.async_resolve(host, std::to_string(port), kTuple);
    if (rec) {
      m.error = "resolve: " + rec.message();
      co_return;
    }
    m.stream.expires_after(m.timeout);
    auto [ec, ep] = co_await m.stream.async_connect(endpoints, kTuple);
    m.error = ec ? "connect: " + ec.message() : "";
  });
  return m.error.empty();
}

HttpResult HttpConnection::call(const std::string& method, const std::string& target, const std::string& body,
                                const Headers& headers) {
  namespace http = boost::beast::http;
  Impl& m = *impl_;
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
  m.run([&]() -> boost::asio::awaitable<void> {
    m.stream.expires_after(m.timeout);
    auto [wec, wn] = co_await http::async_write(m.stream, req, kTuple);
    // A server may answer before it has read the whole body (413 for a body over its limit) and close: its answer
    // is then what it said, not the write's broken pipe. Read it where there is one.
    http::response_parser<http::string_body> parser;
    parser.body_limit(64u << 20);
    m.stream.expires_after(wec ? std::min(m.timeout, std::chrono::milliseconds(2000)) : m.timeout);
    auto [rec, rn] = co_await http::async_read(m.stream, m.buffer, parser, kTuple);
    if (rec) {
      out.error = wec ? "write: " + wec.message() : "read: " + rec.message();
      co_return;
    }
    const auto& res = parser.get();
    out.status = static_cast<int>(res.result_int());
    for (const auto& f : res) out.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
    out.body = res.body();
  });
  return out;
}

bool HttpConnection::send_raw(std::string_view bytes) {
  Impl& m = *impl_;
  bool ok = false;
  m.run([&]() -> boost::asio::awaitable<void> {
    m.stream.expires_after(m.timeout);
    auto [ec, n] = co_await boost::asio::async_write(m.stream, boost::asio::buffer(bytes.data(), bytes.size()), kTuple);
    ok = !ec;
  });
  return ok;
}

RawRead HttpConnection::read_until_close(std::chrono::milliseconds timeout) {
  Impl& m = *impl_;
  RawRead out;
  out.data.assign(static_cast<const char*>(m.buffer.data().data()), m.buffer.size());
  m.buffer.consume(m.buffer.size());
  boost::asio::steady_timer timer(m.io, timeout);
  timer.async_wait([&m](boost::beast::error_code ec) {
    if (!ec) m.stream.socket().cancel();  // deadline: abort the read, keep the socket
  });
  m.run([&]() -> boost::asio::awaitable<void> {
    m.stream.expires_never();
    char chunk[4096];
    while (true) {
      auto [ec, n] = co_await m.stream.async_read_some(boost::asio::buffer(chunk), kTuple);
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

void HttpConnection::close() {
  boost::beast::error_code ec;
  impl_->stream.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
  impl_->stream.close();
}

const std::string& HttpConnection::last_error() const { return impl_->error; }

HttpResult http_call(const std::string& host, std::uint16_t port, const std::string& method,
                     const std::string& target, const std::string& body, const Headers& headers) {
  HttpConnection conn;
  if (!conn.connect(host, port)) {
    HttpResult out;
    out.error = conn.last_error();
    return out;
  }
  return conn.call(method, target, body, headers);
}

}  // namespace tsum::api
