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
  // Most connections open at once; 0: the process's open-files soft limit less a reserve for everything else the
  // daemon opens (open_files_cap()). At the cap a new connection closes the connection idle the longest (one
  // waiting for its next request, or for the rest of its first); with none idle it is answered 503 and closed.
  std::size_t max_connections = 0;
  // Value of the Server header on every response.
  std::string server_name = "tsumd";
};

// The connections a process may hold open under an open-files soft limit of `soft`: all but a reserve of 256 (a
// quarter under a limit of 1024 or less) for the database, its logs, the runs' pipes and files being served.
std::size_t open_files_cap(std::uint64_t soft);

// Raises the soft open-files limit to the hard one (within the kernel's fs.nr_open); returns the soft limit now
// in effect. The daemon calls it once at start.
std::uint64_t raise_open_files_limit();

}  // namespace tsum::api
