// HttpSession: one accepted HTTP/1.1 connection.
//
// Reads requests one at a time (pipelined requests are answered in order), turns each into a Request, runs it
// through the Router and writes the Response. Contract:
//  - keep-alive per HTTP/1.1 rules: "Connection: close", HTTP/1.0 without keep-alive, or Response::close end
//    the connection after the response;
//  - every read has a deadline: the first request on a connection must arrive within read_timeout of accept;
//    later ones must start within idle_timeout of the previous response and then complete within
//    read_timeout. On expiry the connection is closed without a response;
//  - every write has write_timeout;
//  - protocol errors are answered and the connection closed: malformed request (including an HTTP version
//    other than 1.0/1.1) -> 400, body over body_limit -> 413, headers over header_limit -> 431 (all
//    {"error":"invalid_argument"}); a bad target on an otherwise well-formed request gets 400 and keeps the connection;
//  - exceptions from handlers or the router become 500 {"error":"internal"}; run() never throws;
//  - connections closed by us are closed gracefully: send FIN, drain what the peer still sends for a short
//    while, then close (so a peer that is still uploading reads our 4xx instead of a reset).
//
// Single-threaded: run() and close() must be called on the io_context thread that owns the socket.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <string>

#include "api/http_types.h"
#include "api/router.h"
#include "api/server_options.h"

namespace tsum::api {

class HttpSession {
 public:
  // `router` must outlive run().
  HttpSession(boost::asio::ip::tcp::socket socket, const Router& router, ServerOptions opts);

  HttpSession(const HttpSession&) = delete;
  HttpSession& operator=(const HttpSession&) = delete;

  // Serves requests until the peer closes, a deadline expires, a protocol error, or close(). Never throws.
  boost::asio::awaitable<void> run();

  // Closes the socket. A pending read or write fails and run() returns; if a handler is running, run() returns
  // when it finishes, without writing its response. Idempotent.
  void close();

  // Peer "ip:port", "" if unknown.
  const std::string& remote() const { return remote_; }

 private:
  using Parser = boost::beast::http::request_parser<boost::beast::http::string_body>;
  using Message = boost::beast::http::request<boost::beast::http::string_body>;

  // Waits up to idle_timeout for the first bytes of the next request. False: close the connection.
  boost::asio::awaitable<bool> wait_for_next_request();
  // Reads one full request into `parser`. False: the connection is done (errors are already answered).
  boost::asio::awaitable<bool> read_request(Parser& parser);
  // Answers a read error (400/413/431) or ignores it (EOF, timeout, network error, close()).
  boost::asio::awaitable<void> on_read_error(boost::beast::error_code ec);
  // Writes an error response and closes gracefully.
  boost::asio::awaitable<void> reject(int status, std::string detail);
  // Builds the Request and runs the router; never throws.
  boost::asio::awaitable<Response> handle(Message& msg);
  // Writes `res`; false on a write error.
  boost::asio::awaitable<bool> write_response(Response res, unsigned version, bool keep_alive);
  // Writes the head of a streaming response, runs its streamer, then closes.
  boost::asio::awaitable<void> write_stream(Response res, unsigned version);
  boost::asio::awaitable<bool> write_continue(unsigned version);
  // Half-closes, drains the peer for a short while, closes.
  boost::asio::awaitable<void> linger_close();

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  const Router& router_;
  ServerOptions opts_;
  std::string remote_;
  bool closed_ = false;
};

}  // namespace tsum::api
