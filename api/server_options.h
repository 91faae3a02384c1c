// Tunables for HttpServer and its connections.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace tsum::api {

struct ServerOptions {
  // Largest accepted request body. A larger Content-Length, or a chunked body growing past it, gets
  // 413 {"error":"invalid_argument"} and the connection is closed.
  std::size_t body_limit = 1 << 20;
  // Largest accepted request line plus headers; larger gets 431 and the connection is closed.
  std::uint32_t header_limit = 16 * 1024;
  // Deadline for reading one request (header and body together, from its first byte or, on a fresh
  // connection, from accept). On expiry the connection is closed without a response.
  std::chrono::seconds read_timeout{30};
  // Deadline for each response write (and the 100-continue interim response).
  std::chrono::seconds write_timeout{30};
  // How long a keep-alive connection may sit between requests before it is closed.
  std::chrono::seconds idle_timeout{60};
  // Where bodies of RouteOptions::body_to_file routes are streamed (created if missing); required for such
  // routes. Their size limit unless the route sets its own.
  std::string upload_dir;
  std::uint64_t upload_limit = std::uint64_t{16} << 30;
  // TLS: both set makes the server speak HTTPS only (PEM files: the certificate chain and its private key).
  std::string tls_cert_file;
  std::string tls_key_file;
  // Value of the Server header on every response.
  std::string server_name = "tsumd";
};

}  // namespace tsum::api
