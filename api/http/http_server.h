// The room api/http/ owns HTTP: the Boost.Beast server (TCP and TLS sessions), the router, the client, the types they
// share and the dashboard's static files. It calls only common/; no route or daemon code is here.
//
// HttpServer: accepts TCP connections and serves each with an HttpSession (see http_session.h for the
// per-connection contract: keep-alive, deadlines, error answers, uploads to files, file bodies).
//
// TLS: when ServerOptions names tls_cert_file and tls_key_file, the server speaks HTTPS only (TLS 1.2 or
// newer); a client that does not complete a TLS handshake within read_timeout is disconnected without an answer.
//
// Threading: the server starts no threads. Without `network`, everything runs on `io`. With `network` (io_contexts
// that other threads run, one thread each; ignored for TLS), connections are accepted on the first and read,
// parsed and written on each in turn, and only the routes run on `io` (HttpSession): the daemon's event loop,
// which owns the database, then spends none of its time in socket calls and HTTP parsing, a third to a half of a
// request's CPU (perf, bench/rest.sh). listen() must be called before run() or on the io_context thread; stop()
// may be called from any thread; the destructor must run on the io_context thread or after run() has returned,
// and, with `network`, after the network threads have been joined (each `network` io_context must outlive `io`'s
// pending work, since a route that finishes late hands its response back there).
//
// Lifetime: `router` must outlive the io_context's work (handlers may still be running after stop()). The
// server's internal state is shared with its coroutines, so destroying the HttpServer while they are pending
// is safe: the destructor stops the server and the coroutines finish on their own.
//
// Usage:
//   Router router;
//   router.add("GET", "/v1/runs/{id}", get_run);
//   HttpServer server(io, router, {});
//   auto port = server.listen("127.0.0.1", 8080);
//   if (!port) return port.error();
//   io.run();  // returns after server.stop() once open connections and running handlers have finished
#pragma once

#include <boost/asio/io_context.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api/http/router.h"
#include "api/http/server_options.h"
#include "common/result.h"

namespace tsum::api {

class HttpServer {
 public:
  HttpServer(boost::asio::io_context& io, const Router& router, ServerOptions opts = {},
             std::vector<boost::asio::io_context*> network = {});
  ~HttpServer();

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port and starts accepting. `host` is an IP address or a resolvable name ("127.0.0.1",
  // "0.0.0.0", "::1", "localhost"); port 0 picks an ephemeral port. Returns the bound port.
  // Errors: invalid_argument (host does not resolve; TLS certificate or key missing, unreadable or not
  // matching, naming the file), unavailable (bind/listen failed, e.g. port in use),
  // already_exists (already listening), cancelled (stop() was called).
  // With `network`, nothing is accepted until accept(): the routes may still be added on `io` meanwhile.
  Result<std::uint16_t> listen(const std::string& host, std::uint16_t port);
  // With `network`: starts accepting, once every route is in place. Without it, listen() already did.
  void accept();

  // Stops accepting and closes every open connection (their pending reads/writes fail). Handlers already
  // running finish, but their responses are not sent. Safe to call twice and from any thread (the work is
  // dispatched to the io_context).
  void stop();

  // Number of open connections. For tests and metrics.
  std::size_t connection_count() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace tsum::api
