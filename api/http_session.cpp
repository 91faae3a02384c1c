#include "api/http_session.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include <algorithm>
#include <cctype>
#include <exception>
#include <optional>

namespace tsum::api {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::awaitable;
using asio::ip::tcp;

constexpr auto kUseTuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t kReadChunk = 4096;
constexpr std::size_t kMaxDrainBytes = 4 << 20;
constexpr std::chrono::seconds kLingerTimeout{2};

std::string to_string(beast::string_view s) { return std::string(s.data(), s.size()); }

bool is_token_char(char c) {
  if (std::isalnum(static_cast<unsigned char>(c))) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool valid_header_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), is_token_char);
}

bool valid_header_value(std::string_view value) {
  return value.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

// Copies status and headers of `res` into `msg`. False when the handler produced something unsendable.
template <class Msg>
bool fill_head(Msg& msg, const Response& res, const std::string& server_name) {
  if (res.status < 200 || res.status > 599) return false;
  if (!valid_header_value(res.content_type) || !valid_header_value(server_name)) return false;
  msg.result(static_cast<unsigned>(res.status));
  msg.set(http::field::server, server_name);
  msg.set(http::field::content_type, res.content_type);
  for (const auto& [name, value] : res.headers) {
    if (!valid_header_name(name) || !valid_header_value(value)) return false;
    if (beast::iequals(name, "content-length") || beast::iequals(name, "transfer-encoding") ||
        beast::iequals(name, "connection")) {
      continue;  // owned by the server
    }
    if (beast::iequals(name, "content-type") || beast::iequals(name, "server")) {
      msg.set(beast::string_view(name), value);
    } else {
      msg.insert(beast::string_view(name), value);
    }
  }
  return true;
}

Response invalid_response() {
  return error_response(500, "internal", "handler produced an invalid response (status or header)");
}

const beast::error_category& http_error_category() {
  static const beast::error_category& category = http::make_error_code(http::error::bad_method).category();
  return category;
}

}  // namespace

HttpSession::HttpSession(tcp::socket socket, const Router& router, ServerOptions opts)
    : stream_(std::move(socket)), router_(router), opts_(std::move(opts)) {
  beast::error_code ec;
  tcp::endpoint peer = stream_.socket().remote_endpoint(ec);
  if (!ec) remote_ = peer.address().to_string() + ":" + std::to_string(peer.port());
  stream_.socket().set_option(tcp::no_delay(true), ec);
}

void HttpSession::close() {
  if (closed_) return;
  closed_ = true;
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
  stream_.close();
}

awaitable<void> HttpSession::run() {
  bool first = true;
  while (!closed_) {
    if (!first && buffer_.size() == 0) {
      bool more = co_await wait_for_next_request();
      if (!more) break;
    }
    first = false;

    Parser parser;
    parser.body_limit(opts_.body_limit);
    parser.header_limit(opts_.header_limit);
    bool have_request = co_await read_request(parser);
    if (!have_request) break;

    Message msg = parser.release();
    const unsigned version = msg.version();
    Response res = co_await handle(msg);
    if (closed_) break;
    if (res.streamer) {
      co_await write_stream(std::move(res), version);
      break;
    }
    const bool keep_alive = msg.keep_alive() && !res.close;
    bool written = co_await write_response(std::move(res), version, keep_alive);
    if (!written) break;
    if (!keep_alive) {
      co_await linger_close();
      break;
    }
  }
  close();
}

awaitable<bool> HttpSession::wait_for_next_request() {
  stream_.expires_after(opts_.idle_timeout);
  auto [ec, n] = co_await stream_.async_read_some(buffer_.prepare(kReadChunk), kUseTuple);
  if (ec) co_return false;  // peer closed, idle timeout, or close()
  buffer_.commit(n);
  co_return true;
}

awaitable<bool> HttpSession::read_request(Parser& parser) {
  // One deadline for the whole request: header and body together.
  stream_.expires_after(opts_.read_timeout);
  auto [ec, n] = co_await http::async_read_header(stream_, buffer_, parser, kUseTuple);
  if (ec) {
    co_await on_read_error(ec);
    co_return false;
  }
  const auto& head = parser.get();  // Beast accepts only HTTP/1.0 and HTTP/1.1; others fail as bad_version
  if (!parser.is_done() && beast::iequals(head[http::field::expect], "100-continue")) {
    bool sent = co_await write_continue(head.version());
    if (!sent) co_return false;
    stream_.expires_after(opts_.read_timeout);
  }
  if (!parser.is_done()) {
    auto [body_ec, body_n] = co_await http::async_read(stream_, buffer_, parser, kUseTuple);
    if (body_ec) {
      co_await on_read_error(body_ec);
      co_return false;
    }
  }
  co_return true;
}

awaitable<void> HttpSession::on_read_error(beast::error_code ec) {
  if (closed_ || ec == http::error::end_of_stream || ec == beast::error::timeout ||
      ec == asio::error::operation_aborted) {
    co_return;  // peer went away between requests, deadline hit (socket already closed), or close()
  }
  if (ec == http::error::body_limit) {
    co_await reject(413, "request body exceeds " + std::to_string(opts_.body_limit) + " bytes");
  } else if (ec == http::error::header_limit) {
    co_await reject(431, "request header exceeds " + std::to_string(opts_.header_limit) + " bytes");
  } else if (ec.category() == http_error_category()) {
    co_await reject(400, "malformed HTTP request: " + ec.message());
  }
  // Anything else is a network error: nothing to answer.
}

awaitable<void> HttpSession::reject(int status, std::string detail) {
  bool written = co_await write_response(error_response(status, "invalid_argument", detail), 11, false);
  if (written) co_await linger_close();
}

awaitable<Response> HttpSession::handle(Message& msg) {
  Request req;
  req.method = to_string(msg.method_string());
  req.target = to_string(msg.target());
  auto parsed = parse_target(req.target);
  if (!parsed) co_return error_response(parsed.error());
  req.path = std::move(parsed->path);
  req.query = std::move(parsed->query);
  for (const auto& field : msg) req.headers.emplace_back(to_string(field.name_string()), to_string(field.value()));
  req.body = std::move(msg.body());
  req.remote = remote_;

  std::string failure;
  try {
    co_return co_await router_.dispatch(req);
  } catch (const std::exception& e) {
    failure = e.what();
  } catch (...) {
    failure = "unknown exception";
  }
  co_return error_response(500, "internal", "request failed: " + failure);
}

awaitable<bool> HttpSession::write_response(Response res, unsigned version, bool keep_alive) {
  http::response<http::string_body> msg;
  msg.version(version);
  if (!fill_head(msg, res, opts_.server_name)) {
    res = invalid_response();
    msg = {};
    msg.version(version);
    fill_head(msg, res, opts_.server_name);
  }
  if (res.status == 204 || res.status == 304) res.body.clear();  // these must not carry a body
  msg.body() = std::move(res.body);
  msg.keep_alive(keep_alive);
  msg.prepare_payload();

  stream_.expires_after(opts_.write_timeout);
  auto [ec, n] = co_await http::async_write(stream_, msg, kUseTuple);
  co_return !ec;
}

awaitable<void> HttpSession::write_stream(Response res, unsigned version) {
  http::response<http::empty_body> head;
  head.version(version);
  if (!fill_head(head, res, opts_.server_name)) {
    bool written = co_await write_response(invalid_response(), version, false);
    if (written) co_await linger_close();
    co_return;
  }
  head.keep_alive(false);  // the body ends when the connection does
  http::response_serializer<http::empty_body> serializer{head};
  stream_.expires_after(opts_.write_timeout);
  auto [ec, n] = co_await http::async_write_header(stream_, serializer, kUseTuple);
  if (ec) co_return;

  stream_.expires_never();
  try {
    co_await res.streamer(stream_);
  } catch (...) {
    // The stream simply ends; the peer sees the connection close.
  }
  close();
}

awaitable<bool> HttpSession::write_continue(unsigned version) {
  http::response<http::empty_body> interim{http::status::continue_, version};
  stream_.expires_after(opts_.write_timeout);
  auto [ec, n] = co_await http::async_write(stream_, interim, kUseTuple);
  co_return !ec;
}

awaitable<void> HttpSession::linger_close() {
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  stream_.expires_after(std::min<std::chrono::seconds>(opts_.read_timeout, kLingerTimeout));
  std::size_t drained = 0;
  while (!closed_ && drained < kMaxDrainBytes) {
    auto [read_ec, n] = co_await stream_.async_read_some(buffer_.prepare(kReadChunk), kUseTuple);
    if (read_ec) break;
    drained += n;
  }
  close();
}

}  // namespace tsum::api
