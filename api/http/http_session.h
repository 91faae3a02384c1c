// HttpSession: one accepted HTTP/1.1 connection, over plain TCP (beast::tcp_stream) or TLS
// (beast::ssl_stream<beast::tcp_stream>; http_session_tcp.cpp and http_session_tls.cpp instantiate them).
//
// Reads requests one at a time (pipelined requests are answered in order), turns each into a Request, runs it
// through the Router and writes the Response. Contract:
//  - TLS: the handshake comes first, within read_timeout of accept; a failed or late handshake closes the
//    connection without a word;
//  - keep-alive per HTTP/1.1 rules: "Connection: close", HTTP/1.0 without keep-alive, or Response::close end
//    the connection after the response;
//  - the head of each request is read first; Router::options_for() then decides where the body goes: in memory
//    (Request::body, limit RouteOptions::body_limit or ServerOptions::body_limit) or, for body_to_file routes,
//    streamed to a fresh file under ServerOptions::upload_dir (Request::body_file, limit the route's body_limit
//    or ServerOptions::upload_limit). "Expect: 100-continue" is answered only once the head is accepted. The
//    upload file is removed after the response (or on any failure) unless the handler moved it away;
//  - every read has a deadline: the first request on a connection must arrive within read_timeout of accept;
//    later ones must start within idle_timeout of the previous response and then complete within
//    read_timeout. A body streamed to a file must instead make progress: each read within read_timeout.
//    On expiry the connection is closed without a response;
//  - every write has write_timeout (a file body: each 64 KiB chunk);
//  - protocol errors are answered and the connection closed: malformed request (including an HTTP version
//    other than 1.0/1.1) -> 400, body over its limit -> 413, headers over header_limit -> 431 (all
//    {"error":"invalid_argument"}); a bad target on an otherwise well-formed request gets 400 and keeps the
//    connection; a body_to_file route without a usable upload_dir -> 500 and close;
//  - Response::file is sent with Content-Length = length; if the file cannot be opened or is too short, the
//    connection is closed instead;
//  - exceptions from handlers or the router become 500 {"error":"internal"}; run() never throws;
//  - connections closed by us are closed gracefully: (TLS: close_notify,) send FIN, drain what the peer still
//    sends for a short while, then close (so a peer that is still uploading reads our 4xx instead of a reset).
//
// Threading: run() and close() must be called on the thread of the socket's executor. With `handlers` (an
// executor of another thread: the daemon's event loop, which owns the database), the session reads, parses and
// writes on its own thread and runs each route there: the route's handler, and a streaming response's streamer,
// never run on the session's thread. A streaming response moves the connection itself to `handlers` (the socket
// is re-opened there), so the streamer writes on the thread it reads from. Without `handlers`, everything runs
// on the socket's thread.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "api/http/http_types.h"
#include "api/http/router.h"
#include "api/http/server_options.h"

namespace tsum::api {

template <class Stream>
class HttpSession {
 public:
  // `stream` is the accepted connection (for TLS, not yet handshaken). `router` must outlive run().
  HttpSession(Stream stream, const Router& router, ServerOptions opts, boost::asio::any_io_executor handlers = {});

  HttpSession(const HttpSession&) = delete;
  HttpSession& operator=(const HttpSession&) = delete;

  // Serves requests until the peer closes, a deadline expires, a protocol error, or close(). Never throws.
  boost::asio::awaitable<void> run();

  // Closes the socket. A pending read or write fails and run() returns; if a handler is running, run() returns
  // when it finishes, without writing its response. Idempotent.
  void close();

  // When the connection began waiting for its next request (steady_clock nanoseconds), or 0 while one is being
  // read to its end, handled or answered: the server closes the connection idle the longest when it is full.
  // Shared so the server can read it from the acceptor's thread.
  std::shared_ptr<std::atomic<std::int64_t>> idle_since() const { return idle_since_; }

  // Peer "ip:port", "" if unknown.
  const std::string& remote() const { return remote_; }

  // Writes the head of a streaming response, runs its streamer, then closes: the part of run() that a session
  // moved to the handlers' thread does there.
  boost::asio::awaitable<void> stream(Response res, unsigned version) { return write_stream(std::move(res), version); }

 private:
  // A request read off the wire, before routing.
  struct Incoming {
    Request req;
    unsigned version = 11;
    bool keep_alive = true;
    const RouteOptions* route = nullptr;  // of the route that will answer; nullptr: the router's 404 or 405
  };

  // Waits up to idle_timeout for the first bytes of the next request. False: close the connection.
  boost::asio::awaitable<bool> wait_for_next_request();
  // Reads one full request. nullopt: the connection is done (errors are already answered). A body streamed to
  // a file is named in `upload` as soon as it exists, so that the caller removes it whatever happens.
  boost::asio::awaitable<std::optional<Incoming>> read_request(std::string& upload);
  // Reads the body into `parser` after the head was accepted (sends 100 Continue when asked).
  template <class Parser>
  boost::asio::awaitable<bool> read_body(Parser& parser, std::uint64_t limit, bool progress_deadline);
  // Answers a read error (400/413/431) or ignores it (EOF, timeout, network error, close()).
  boost::asio::awaitable<void> on_read_error(boost::beast::error_code ec, std::uint64_t body_limit);
  // Writes an error response and closes gracefully.
  boost::asio::awaitable<void> reject(int status, std::string code, std::string detail);
  // Parses the target and runs the router (on the handlers' thread when there is one); never throws.
  boost::asio::awaitable<Response> handle(Request& req, const RouteOptions* options);
  boost::asio::awaitable<Response> route(Request& req);
  // A streaming response with `handlers`: the connection goes on there, in a new session.
  void move_stream_to_handlers(Response res, unsigned version);
  // Writes `res` (string or file body); false on a write error or an unsendable file.
  boost::asio::awaitable<bool> write_response(Response res, unsigned version, bool keep_alive);
  boost::asio::awaitable<bool> write_file(Response& res, boost::beast::http::response_header<>& head,
                                          bool keep_alive);
  // Writes the head of a streaming response, runs its streamer, then closes.
  boost::asio::awaitable<void> write_stream(Response res, unsigned version);
  boost::asio::awaitable<bool> write_continue(unsigned version);
  // TLS: sends close_notify and waits (briefly) for the peer's. Plain TCP: nothing.
  boost::asio::awaitable<void> tls_shutdown();
  // Half-closes, drains the peer for a short while, closes.
  boost::asio::awaitable<void> linger_close();

  Stream stream_;
  boost::beast::flat_buffer buffer_;
  const Router& router_;
  ServerOptions opts_;
  boost::asio::any_io_executor handlers_;  // empty: routes run on the session's own thread
  std::string remote_;
  bool closed_ = false;
  std::shared_ptr<std::atomic<std::int64_t>> idle_since_;
};

using PlainHttpSession = HttpSession<boost::beast::tcp_stream>;
using TlsHttpSession = HttpSession<boost::beast::ssl_stream<boost::beast::tcp_stream>>;

extern template class HttpSession<boost::beast::tcp_stream>;
extern template class HttpSession<boost::beast::ssl_stream<boost::beast::tcp_stream>>;

}  // namespace tsum::api
