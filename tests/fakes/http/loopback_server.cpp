#include "tests/fakes/http/loopback_server.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <exception>
#include <stdexcept>
#include <optional>
#include <thread>

namespace tsum::providers::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace ssl = asio::ssl;
using asio::ip::tcp;

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
constexpr std::chrono::seconds kWriteTimeout{30};
// A session that fails (an exception from Beast, say) ends alone; it must not take the server thread along.
constexpr auto kIgnoreErrors = [](std::exception_ptr) {};

LoopbackRequest to_request(const bhttp::request<bhttp::string_body>& msg) {
  LoopbackRequest req{std::string(msg.method_string()), std::string(msg.target())};
  for (const auto& field : msg) req.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  req.body = msg.body();
  return req;
}

LoopbackReply call(const LoopbackHandler& handler, const LoopbackRequest& req) {
  try {
    return handler(req);
  } catch (const std::exception& e) {
    return {.status = 500, .body = std::string("handler failed: ") + e.what()};
  }
}

// The reply as a Beast response; a 500 when the handler produced something unsendable (a bad status or
// header).
bhttp::response<bhttp::string_body> to_response(LoopbackReply reply, unsigned version, bool keep_alive) {
  bhttp::response<bhttp::string_body> res;
  try {
    if (reply.status < 100 || reply.status > 999) throw std::invalid_argument("status " + std::to_string(reply.status));
    res = {static_cast<bhttp::status>(reply.status), version};
    for (auto& [name, value] : reply.headers) res.insert(name, value);
    res.body() = std::move(reply.body);
  } catch (const std::exception& e) {
    res = {bhttp::status::internal_server_error, version};
    res.body() = std::string("handler produced an unsendable reply: ") + e.what();
  }
  res.keep_alive(keep_alive);
  res.prepare_payload();
  return res;
}

}  // namespace

struct LoopbackServer::Impl {
  LoopbackHandler handler;
  LoopbackOptions opts;
  std::optional<ssl::context> tls;
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  std::thread thread;

  asio::awaitable<void> accept_loop() {
    for (;;) {
      auto [ec, socket] = co_await acceptor.async_accept(kTuple);
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
      if (!ec) asio::co_spawn(io, serve(std::move(socket)), kIgnoreErrors);
    }
  }

  asio::awaitable<void> serve(tcp::socket socket) {
    boost::system::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    if (!tls) {
      beast::tcp_stream stream(std::move(socket));
      co_await session(stream);
      co_return;
    }
    beast::ssl_stream<beast::tcp_stream> stream(std::move(socket), *tls);
    stream.next_layer().expires_after(opts.read_timeout);
    auto [ec] = co_await stream.async_handshake(ssl::stream_base::server, kTuple);
    if (!ec) co_await session(stream);
  }

  template <class Stream>
  asio::awaitable<void> session(Stream& stream) {
    beast::flat_buffer buffer;
    for (;;) {
      bhttp::request_parser<bhttp::string_body> parser;
      parser.body_limit(opts.body_limit);
      beast::get_lowest_layer(stream).expires_after(opts.read_timeout);
      auto [ec, n] = co_await bhttp::async_read(stream, buffer, parser, kTuple);
      if (ec) co_return;
      auto msg = parser.release();
      LoopbackRequest req = to_request(msg);
      boost::system::error_code peer_ec;
      auto peer = beast::get_lowest_layer(stream).socket().remote_endpoint(peer_ec);
      if (!peer_ec) req.peer = peer.address().to_string(), req.peer_port = peer.port();
      LoopbackReply reply = call(handler, req);
      if (reply.delay.count() > 0) {
        beast::get_lowest_layer(stream).expires_never();
        asio::steady_timer timer(io, reply.delay);
        co_await timer.async_wait(kTuple);
      }
      if (reply.drop) co_return;  // the stream's destructor closes the connection: no answer at all
      // A reply that says "Connection: close" ends the connection after it, as a server's idle limit would.
      auto connection = find_header(reply.headers, "Connection");
      const bool keep = msg.keep_alive() && !(connection && beast::iequals(*connection, "close"));
      bool written = co_await write(stream, msg.version(), keep, std::move(reply));
      if (!written || !keep) co_return;
    }
  }

  template <class Stream>
  asio::awaitable<bool> write(Stream& stream, unsigned version, bool keep_alive, LoopbackReply reply) {
    auto res = to_response(std::move(reply), version, keep_alive);
    beast::get_lowest_layer(stream).expires_after(kWriteTimeout);
    auto [ec, n] = co_await bhttp::async_write(stream, res, kTuple);
    co_return !ec;
  }
};

LoopbackServer::LoopbackServer(LoopbackHandler handler) : impl_(std::make_unique<Impl>()) {
  impl_->handler = std::move(handler);
}

LoopbackServer::~LoopbackServer() { stop(); }

Result<std::uint16_t> LoopbackServer::start(const LoopbackOptions& opts) {
  if (!impl_) return make_error(Code::cancelled, "loopback server was stopped");
  Impl& s = *impl_;
  if (s.acceptor.is_open() || s.thread.joinable()) return make_error(Code::already_exists, "loopback server already started");
  s.opts = opts;
  boost::system::error_code ec;
  auto address = asio::ip::make_address(opts.host == "localhost" ? "127.0.0.1" : opts.host, ec);
  if (ec) return make_error(Code::invalid_argument, "listen host '" + opts.host + "' is not an IP address");
  if (!opts.cert_file.empty() || !opts.key_file.empty()) {
    s.tls.emplace(ssl::context::tls_server);
    s.tls->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                       ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    s.tls->use_certificate_chain_file(opts.cert_file, ec);
    if (ec) return make_error(Code::invalid_argument, "TLS certificate '" + opts.cert_file + "': " + ec.message());
    s.tls->use_private_key_file(opts.key_file, ssl::context::pem, ec);
    if (ec) return make_error(Code::invalid_argument, "TLS key '" + opts.key_file + "': " + ec.message());
  }
  tcp::endpoint endpoint(address, opts.port);
  s.acceptor.open(endpoint.protocol(), ec);
  if (!ec) s.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(endpoint, ec);
  if (!ec) s.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    s.acceptor.close(ec);
    return make_error(Code::unavailable, "listen on " + opts.host + ":" + std::to_string(opts.port) + ": " + ec.message());
  }
  std::uint16_t port = s.acceptor.local_endpoint(ec).port();
  std::string host = address.is_v6() ? "[" + address.to_string() + "]" : address.to_string();
  base_url_ = (s.tls ? "https://" : "http://") + host + ":" + std::to_string(port);
  asio::co_spawn(s.io, s.accept_loop(), kIgnoreErrors);
  s.thread = std::thread([&s] { s.io.run(); });
  return port;
}

void LoopbackServer::stop() {
  if (!impl_) return;
  if (impl_->thread.joinable()) {
    impl_->io.stop();
    impl_->thread.join();
  }
  impl_.reset();  // destroys the pending sessions with the io_context: their connections close
}

}  // namespace tsum::providers::http
