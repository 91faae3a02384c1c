// LoopbackServer: a small HTTP/1.1 server, plain or TLS, for provider fakes and the HTTP client's tests.
// It runs on a thread of its own and calls one handler per request; the handler's reply can also be
// delayed (a slow or hung server) or dropped (the connection closes without an answer: a lost response).
//
// Threading: the handler runs on the server's thread, one request at a time. start() and stop() are for
// the owning thread. Connections are kept alive; each read has a deadline.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/result.h"
#include "providers/http/http_types.h"

namespace tsum::providers::http {

struct LoopbackRequest {
  std::string method;
  std::string target;  // path and query, as on the wire
  HttpHeaders headers = {};
  std::string body = {};
  std::string peer = {};  // the client's IP address
  std::uint16_t peer_port = 0;  // and its port: the same on each request of one connection
};

struct LoopbackReply {
  int status = 200;
  HttpHeaders headers = {};
  std::string body = {};
  std::chrono::milliseconds delay{0};  // wait this long before answering (or dropping)
  bool drop = false;                   // close the connection instead of answering
};

using LoopbackHandler = std::function<LoopbackReply(const LoopbackRequest&)>;

struct LoopbackOptions {
  std::string host = "127.0.0.1";  // an IP address, or "localhost"
  std::uint16_t port = 0;          // 0: an ephemeral port
  std::string cert_file = {};      // PEM certificate chain; with key_file: serve TLS, else plain HTTP
  std::string key_file = {};
  std::chrono::seconds read_timeout{30};
  std::size_t body_limit = 16u << 20;
};

class LoopbackServer {
 public:
  explicit LoopbackServer(LoopbackHandler handler);
  ~LoopbackServer();  // stop()
  LoopbackServer(const LoopbackServer&) = delete;
  LoopbackServer& operator=(const LoopbackServer&) = delete;

  // Binds and starts serving; returns the port. invalid_argument: bad host, unreadable certificate or
  // key; unavailable: bind/listen failed; already_exists: started before.
  Result<std::uint16_t> start(const LoopbackOptions& opts);

  // Stops serving for good: open connections are closed, replies being delayed are never sent. Idempotent.
  void stop();

  // "https://127.0.0.1:<port>" (or http://), once started.
  const std::string& base_url() const { return base_url_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string base_url_;
};

}  // namespace tsum::providers::http
