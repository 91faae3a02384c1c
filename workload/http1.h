// HTTP/1.1 messages for `tsum-train serve` and `tsum-train load` (serve.h, load_gen.h): a parser that takes one
// whole message (head and Content-Length body) off the front of a connection's buffer, the writers of requests
// and responses, and a blocking client connection. No libtorch and no Boost, so that the workload builds where
// only libtorch is (a GPU machine's workload-only build) and the parser can be fuzzed on its own
// (tests/fuzz/fuzz_infer_request.cpp).
//
// What it accepts: HTTP/1.0 and 1.1, CRLF line ends, bodies framed by Content-Length (a request without one has
// none). What it refuses, with the status a server answers: a malformed start line or header (400), a head over
// Limits::max_head bytes or with more than 100 header fields (431), a body over Limits::max_body (413), any
// Transfer-Encoding (501: chunked bodies are not read), another HTTP version (505).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tsum::workload::http1 {

struct Header {
  std::string name;  // lower case
  std::string value;
};

struct Message {
  std::string method;  // a request's
  std::string target;
  int status = 0;  // a response's
  int minor = 1;   // HTTP/1.minor
  std::vector<Header> headers;
  std::string body;
  bool keep_alive = true;  // 1.1 unless "Connection: close"; 1.0 only with "Connection: keep-alive"

  // The first value of a header, by its lower-case name; nullptr when absent.
  const std::string* header(std::string_view lower_name) const;
};

struct Limits {
  std::size_t max_head = 16 * 1024;
  std::size_t max_body = 64u << 20;
};

enum class Kind { request, response };

struct Taken {
  enum class What { incomplete, message, error } what = What::incomplete;
  Message message;
  int status = 0;     // error: the status to answer with (400, 413, 431, 501, 505)
  std::string error;  // error: why, for the answer's body
};

// Takes the first complete message off the front of `buffer` (removing its bytes), or says that more bytes are
// needed, or why the bytes can never be a message (the connection is then to be answered and closed).
Taken take_message(std::string& buffer, Kind kind, const Limits& limits);

// A response with a Content-Length body; `headers` come after Content-Type and Content-Length.
std::string format_response(int status, std::string_view content_type, std::string_view body,
                            const std::vector<Header>& headers = {}, bool keep_alive = true);

// A request with a Content-Length body (none when `body` is empty and `method` is GET).
std::string format_request(std::string_view method, std::string_view target, std::string_view host,
                           std::string_view content_type, std::string_view body,
                           const std::vector<Header>& headers = {});

std::string_view reason_phrase(int status);

// http://HOST[:PORT][/...] split up; invalid_argument for anything else (https is not spoken here).
struct Url {
  std::string host;
  int port = 80;
};
Result<Url> parse_url(std::string_view url);

// One blocking keep-alive connection to a server, for the load generator and the tests. Not thread-safe: one
// thread owns it.
class Connection {
 public:
  Connection() = default;
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Connects (TCP_NODELAY) within `timeout`. unavailable naming the address when it cannot.
  Status open(const Url& url, std::chrono::milliseconds timeout);
  bool is_open() const { return fd_ >= 0; }
  void close();

  // Sends `request` (formatted bytes) and reads one response within `timeout`, opening the connection first
  // when it is closed (a server may close an idle one). timeout, unavailable (refused, reset) or
  // invalid_argument (a malformed response) as the case may be; the connection is closed after any error.
  Result<Message> round_trip(const std::string& request, std::chrono::milliseconds timeout);

 private:
  Url url_;
  int fd_ = -1;
  std::string in_;
};

}  // namespace tsum::workload::http1
