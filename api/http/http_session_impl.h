// HttpSession's member definitions, for the two files that instantiate it: http_session_tcp.cpp (plain TCP) and
// http_session_tls.cpp (TLS). Two translation units build in parallel (one was the longest step of the build:
// 110 s with GCC, 248 s with clang's sanitizers), and the fuzz build compiles the TLS one without optimizing, as
// no fuzz target speaks TLS. Include nowhere else.
#pragma once

#include "api/http/http_session.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ssl/stream_base.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/file.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/file_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <openssl/ssl.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <type_traits>

#include "api/http/session_support.h"
#include "api/http/socket_writer.h"

namespace tsum::api {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::awaitable;
using asio::ip::tcp;

constexpr std::size_t kReadChunk = 4096;
constexpr std::size_t kMaxDrainBytes = 4 << 20;
constexpr std::chrono::seconds kLingerTimeout{2};

template <class Stream>
constexpr bool kIsTls = !std::is_same_v<Stream, beast::tcp_stream>;

std::string to_string(beast::string_view s) { return std::string(s.data(), s.size()); }

std::string too_large(std::uint64_t limit) { return "request body exceeds " + std::to_string(limit) + " bytes"; }

// Removes the upload file named in `path` (once set) when the request is over, unless the handler moved it.
struct UploadCleanup {
  std::string& path;
  ~UploadCleanup() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove(path, ec);
  }
};

inline std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The Request fields that come from the head; `path` and `query` are filled by handle().
Request request_from_head(const http::request_header<>& head, const std::string& remote) {
  Request req;
  req.method = to_string(head.method_string());
  req.target = to_string(head.target());
  for (const auto& field : head) req.headers.emplace_back(to_string(field.name_string()), to_string(field.value()));
  req.remote = remote;
  return req;
}

}  // namespace

template <class Stream>
HttpSession<Stream>::HttpSession(Stream stream, const Router& router, ServerOptions opts,
                                 asio::any_io_executor handlers)
    : stream_(std::move(stream)),
      router_(router),
      opts_(std::move(opts)),
      handlers_(std::move(handlers)),
      idle_since_(std::make_shared<std::atomic<std::int64_t>>(steady_ns())) {
  tcp::socket& socket = beast::get_lowest_layer(stream_).socket();
  beast::error_code ec;
  tcp::endpoint peer = socket.remote_endpoint(ec);
  if (!ec) remote_ = peer.address().to_string() + ":" + std::to_string(peer.port());
  socket.set_option(tcp::no_delay(true), ec);
}

template <class Stream>
void HttpSession<Stream>::close() {
  if (closed_) return;
  closed_ = true;
  beast::error_code ec;
  beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_both, ec);
  beast::get_lowest_layer(stream_).close();
}

template <class Stream>
awaitable<void> HttpSession<Stream>::run() {
  if constexpr (kIsTls<Stream>) {
    beast::get_lowest_layer(stream_).expires_after(opts_.read_timeout);
    auto [ec] = co_await stream_.async_handshake(asio::ssl::stream_base::server, kUseTuple);
    if (ec) {  // not TLS, a bad client, or too slow: nothing to answer
      close();
      co_return;
    }
  }
  bool first = true;
  while (!closed_) {
    if (!first && buffer_.size() == 0) {
      bool more = co_await wait_for_next_request();
      if (!more) break;
    }
    first = false;

    std::string upload;  // named by read_request as soon as the file exists
    UploadCleanup cleanup{upload};
    std::optional<Incoming> in = co_await read_request(upload);
    if (!in) break;
    idle_since_->store(0);  // busy until answered
    Response res = co_await handle(in->req, in->route);
    if (closed_) break;
    if (res.streamer) {
      if constexpr (!kIsTls<Stream>) {
        if (handlers_) {
          move_stream_to_handlers(std::move(res), in->version);
          co_return;
        }
      }
      co_await write_stream(std::move(res), in->version);
      break;
    }
    const bool keep_alive = in->keep_alive && !res.close;
    bool written = co_await write_response(std::move(res), in->version, keep_alive);
    if (!written) break;
    idle_since_->store(steady_ns());
    if (!keep_alive) {
      co_await linger_close();
      break;
    }
  }
  close();
}

template <class Stream>
awaitable<bool> HttpSession<Stream>::wait_for_next_request() {
  beast::get_lowest_layer(stream_).expires_after(opts_.idle_timeout);
  auto [ec, n] = co_await stream_.async_read_some(buffer_.prepare(kReadChunk), kUseTuple);
  if (ec) co_return false;  // peer closed, idle timeout, or close()
  buffer_.commit(n);
  co_return true;
}

template <class Stream>
awaitable<std::optional<typename HttpSession<Stream>::Incoming>> HttpSession<Stream>::read_request(
    std::string& upload) {
  // One deadline for the head and an in-memory body together (a file body: see read_body).
  http::request_parser<http::empty_body> head_parser;
  head_parser.header_limit(opts_.header_limit);
  head_parser.body_limit(boost::none);  // the route's limit applies once the body's destination is known
  beast::get_lowest_layer(stream_).expires_after(opts_.read_timeout);
  auto [ec, n] = co_await http::async_read_header(stream_, buffer_, head_parser, kUseTuple);
  if (ec) {  // Beast accepts only HTTP/1.0 and HTTP/1.1; others fail as bad_version
    co_await on_read_error(ec, opts_.body_limit);
    co_return std::nullopt;
  }

  const auto& head = head_parser.get();
  Incoming in;
  in.req = request_from_head(head, remote_);
  in.version = head.version();
  in.keep_alive = head.keep_alive();
  const RouteOptions* route = router_.options_for(in.req.method, in.req.target);
  in.route = route;
  const bool to_file = route != nullptr && route->body_to_file;
  const std::uint64_t limit = route != nullptr && route->body_limit != 0 ? route->body_limit
                              : to_file                                  ? opts_.upload_limit
                                                                         : opts_.body_limit;
  if (auto length = head_parser.content_length(); length && *length > limit) {
    co_await reject(413, "invalid_argument", too_large(limit));
    co_return std::nullopt;
  }

  if (!to_file) {
    http::request_parser<http::string_body> parser(std::move(head_parser));
    if (!co_await read_body(parser, limit, false)) co_return std::nullopt;
    in.req.body = std::move(parser.get().body());
    co_return in;
  }

  auto path = new_upload_path(opts_.upload_dir);
  if (!path) {
    co_await reject(500, "internal", path.error().detail);
    co_return std::nullopt;
  }
  http::request_parser<http::file_body> parser(std::move(head_parser));
  beast::error_code open_ec;
  parser.get().body().open(path->c_str(), beast::file_mode::write_new, open_ec);
  if (open_ec) {
    co_await reject(500, "internal", "cannot create upload file " + *path + ": " + open_ec.message());
    co_return std::nullopt;
  }
  upload = *path;
  if (!co_await read_body(parser, limit, true)) co_return std::nullopt;
  in.req.body_file = *path;
  co_return in;  // `parser` goes, and the file is closed, before the handler runs
}

template <class Stream>
template <class Parser>
awaitable<bool> HttpSession<Stream>::read_body(Parser& parser, std::uint64_t limit, bool progress_deadline) {
  parser.body_limit(limit);  // what a chunked body may grow to; Content-Length was checked on the head
  if (parser.is_done()) co_return true;
  if (beast::iequals(parser.get()[http::field::expect], "100-continue")) {
    bool sent = co_await write_continue(parser.get().version());
    if (!sent) co_return false;
    beast::get_lowest_layer(stream_).expires_after(opts_.read_timeout);
  }
  while (!parser.is_done()) {
    auto [ec, n] = co_await http::async_read_some(stream_, buffer_, parser, kUseTuple);
    if (ec) {
      co_await on_read_error(ec, limit);
      co_return false;
    }
    if (progress_deadline) beast::get_lowest_layer(stream_).expires_after(opts_.read_timeout);
  }
  co_return true;
}

template <class Stream>
awaitable<void> HttpSession<Stream>::on_read_error(beast::error_code ec, std::uint64_t body_limit) {
  if (closed_ || ec == http::error::end_of_stream || ec == beast::error::timeout ||
      ec == asio::error::operation_aborted) {
    co_return;  // peer went away between requests, deadline hit (socket already closed), or close()
  }
  if (ec == http::error::body_limit) {
    co_await reject(413, "invalid_argument", too_large(body_limit));
  } else if (ec == http::error::header_limit) {
    co_await reject(431, "invalid_argument", "request header exceeds " + std::to_string(opts_.header_limit) + " bytes");
  } else if (is_http_error(ec)) {
    co_await reject(400, "invalid_argument", "malformed HTTP request: " + ec.message());
  }
  // Anything else is a network (or upload file) error: nothing to answer.
}

template <class Stream>
awaitable<void> HttpSession<Stream>::reject(int status, std::string code, std::string detail) {
  bool written = co_await write_response(error_response(status, code, detail), 11, false);
  if (written) co_await linger_close();
}

template <class Stream>
awaitable<Response> HttpSession<Stream>::handle(Request& req, const RouteOptions* options) {
  // Here: without a handlers' thread, for a route that may run anywhere, and for the router's own 404 and 405.
  if (!handlers_ || !options || options->any_thread) co_return co_await route(req);
  // The session waits here, suspended, while the route runs on the handlers' thread: `req` stays put.
  co_return co_await asio::co_spawn(handlers_, route(req), asio::use_awaitable);
}

template <class Stream>
void HttpSession<Stream>::move_stream_to_handlers(Response res, unsigned version) {
  if constexpr (!kIsTls<Stream>) {
    closed_ = true;
    auto moved = move_socket(beast::get_lowest_layer(stream_).socket(), handlers_);
    if (!moved) return;  // the peer is gone; nothing to stream to
    auto session = std::make_shared<HttpSession>(beast::tcp_stream(std::move(*moved)), router_, opts_);
    asio::co_spawn(handlers_, [session, res = std::move(res), version]() mutable -> awaitable<void> {
      co_await session->stream(std::move(res), version);
    }, asio::detached);
  }
}

template <class Stream>
awaitable<Response> HttpSession<Stream>::route(Request& req) {
  auto parsed = parse_target(req.target);
  if (!parsed) co_return error_response(parsed.error());
  req.path = std::move(parsed->path);
  req.query = std::move(parsed->query);

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

template <class Stream>
awaitable<bool> HttpSession<Stream>::write_response(Response res, unsigned version, bool keep_alive) {
  http::response_header<> head;
  head.version(version);
  if (!fill_head(head, res, opts_.server_name)) {
    res = invalid_response();
    head = {};
    head.version(version);
    fill_head(head, res, opts_.server_name);
  }
  if (res.status == 204 || res.status == 304) {  // these must not carry a body
    res.body.clear();
    res.file.reset();
  }
  if (res.file) co_return co_await write_file(res, head, keep_alive);

  http::response<http::string_body> msg(std::move(head), std::move(res.body));
  msg.keep_alive(keep_alive);
  msg.prepare_payload();
  beast::get_lowest_layer(stream_).expires_after(opts_.write_timeout);
  auto [ec, n] = co_await http::async_write(stream_, msg, kUseTuple);
  co_return !ec;
}

template <class Stream>
awaitable<bool> HttpSession<Stream>::write_file(Response& res, http::response_header<>& head, bool keep_alive) {
  beast::file file;
  if (!open_file_body(*res.file, file)) co_return false;  // nothing sent yet; the caller closes
  http::response<http::empty_body> msg(std::move(head));
  msg.content_length(res.file->length);
  msg.keep_alive(keep_alive);
  http::response_serializer<http::empty_body> serializer{msg};
  beast::get_lowest_layer(stream_).expires_after(opts_.write_timeout);
  auto [ec, n] = co_await http::async_write_header(stream_, serializer, kUseTuple);
  if (ec) co_return false;
  SocketWriter<Stream> out(stream_);
  co_return co_await send_file_body(out, file, res.file->length, opts_.write_timeout);
}

template <class Stream>
awaitable<void> HttpSession<Stream>::write_stream(Response res, unsigned version) {
  http::response<http::empty_body> head;
  head.version(version);
  if (!fill_head(head, res, opts_.server_name)) {
    bool written = co_await write_response(invalid_response(), version, false);
    if (written) co_await linger_close();
    co_return;
  }
  head.keep_alive(false);  // the body ends when the connection does
  http::response_serializer<http::empty_body> serializer{head};
  beast::get_lowest_layer(stream_).expires_after(opts_.write_timeout);
  auto [ec, n] = co_await http::async_write_header(stream_, serializer, kUseTuple);
  if (ec) co_return;

  beast::get_lowest_layer(stream_).expires_never();
  SocketWriter<Stream> out(stream_);
  try {
    co_await res.streamer(out);
  } catch (...) {
    // The stream simply ends; the peer sees the connection close.
  }
  co_await tls_shutdown();  // a TLS peer reading to EOF must see close_notify, not a truncation
  close();
}

template <class Stream>
awaitable<bool> HttpSession<Stream>::write_continue(unsigned version) {
  http::response<http::empty_body> interim{http::status::continue_, version};
  beast::get_lowest_layer(stream_).expires_after(opts_.write_timeout);
  auto [ec, n] = co_await http::async_write(stream_, interim, kUseTuple);
  co_return !ec;
}

template <class Stream>
awaitable<void> HttpSession<Stream>::tls_shutdown() {
  if constexpr (kIsTls<Stream>) {
    if (closed_) co_return;
    // One-way: send our close_notify without waiting for the peer's (as if it had arrived), so a peer that is
    // still uploading does not hold us up; linger_close drains the raw bytes that follow.
    SSL_set_shutdown(stream_.native_handle(), SSL_RECEIVED_SHUTDOWN);
    beast::get_lowest_layer(stream_).expires_after(std::min<std::chrono::seconds>(opts_.write_timeout, kLingerTimeout));
    auto [ec] = co_await stream_.async_shutdown(kUseTuple);
  }
  co_return;
}

template <class Stream>
awaitable<void> HttpSession<Stream>::linger_close() {
  co_await tls_shutdown();
  auto& tcp_stream = beast::get_lowest_layer(stream_);
  beast::error_code ec;
  tcp_stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  tcp_stream.expires_after(std::min<std::chrono::seconds>(opts_.read_timeout, kLingerTimeout));
  std::size_t drained = 0;
  while (!closed_ && drained < kMaxDrainBytes) {  // raw bytes: for TLS, records we no longer decrypt
    auto [read_ec, n] = co_await tcp_stream.async_read_some(buffer_.prepare(kReadChunk), kUseTuple);
    if (read_ec) break;
    drained += n;
  }
  close();
}

}  // namespace tsum::api
