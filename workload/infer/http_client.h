// A blocking HTTP/1.1 keep-alive client on Boost.Beast for `tsum-train load` and the serving tests: each
// Connection's socket lives on one process-wide Asio loop (a thread of its own), and round_trip() waits for its
// answer under a deadline (beast::tcp_stream's expiry). One loop for every connection, so a load of 256
// connections holds 256 sockets, not an event loop each (the process has 1024 files).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "common/result.h"

namespace tsum::workload::http {

using Request = boost::beast::http::request<boost::beast::http::string_body>;

struct Response {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // names in lower case
  std::string body;
  // The first value of a header, by its lower-case name; nullptr when absent.
  const std::string* header(std::string_view lower_name) const;
};

// http://HOST[:PORT][/...] split up; invalid_argument for anything else (https is not spoken here).
struct Url {
  std::string host;
  int port = 80;
};
Result<Url> parse_url(std::string_view url);

// A request with a Content-Length body (none when `body` is empty), its Host and the extra `headers`.
Request make_request(std::string_view method, std::string_view target, std::string_view host,
                     std::string_view content_type = {}, std::string body = {},
                     const std::vector<std::pair<std::string, std::string>>& headers = {});

// One keep-alive connection. Not thread-safe: one thread owns it.
class Connection {
 public:
  Connection();
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Connects (TCP_NODELAY) within `timeout`. unavailable naming the address when it cannot.
  Status open(const Url& url, std::chrono::milliseconds timeout);
  bool is_open() const;
  void close();

  // Sends `request` and reads one response within `timeout`, opening the connection first when it is closed (a
  // server may close an idle one). timeout, unavailable (refused, reset) or invalid_argument (a malformed
  // response) as the case may be; the connection is closed after any error and after an answer that says close.
  Result<Response> round_trip(const Request& request, std::chrono::milliseconds timeout);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tsum::workload::http
