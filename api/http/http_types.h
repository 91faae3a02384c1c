// HTTP request/response values shared by the server, the router and the daemon's handlers.
//
// These are plain values: no sockets, no Beast message types. The server fills a Request from the wire and turns
// a Response back into bytes; handlers only ever see these two structs. Parsing helpers for request targets live
// here too so the router and tests can use them without a server.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace tsum::api {

// An incoming request. The server fills every field except `params`, which the router fills on a match.
struct Request {
  std::string method;                                  // "GET", "POST", ... as sent (extension methods allowed)
  std::string target;                                  // raw target, e.g. "/v1/runs/5?x=1"
  std::string path;                                    // percent-decoded path without query ("+" stays "+")
  std::map<std::string, std::string> query;            // decoded query params; "+" is a space; last one wins
  std::map<std::string, std::string> params;           // path params filled by the router, e.g. {"id","5"}
  std::vector<std::pair<std::string, std::string>> headers;  // in arrival order, names as sent
  std::string body;
  std::string remote;                                  // peer "ip:port"; "" when unknown (e.g. hand-built)
  // Routes added with RouteOptions::body_to_file: the body was streamed to this file (under
  // ServerOptions::upload_dir, never held whole in memory) and `body` is empty. The handler may rename the file
  // to keep it; the server removes it after the response if it is still there. "" for every other route.
  std::string body_file;

  // Value of the first header named `name` (case-insensitive), or "" if absent.
  std::string header(std::string_view name) const;
};

// Writes a response body directly to the connection after the server has sent the status line and headers.
// Used for long-lived streams such as Server-Sent Events. Contract:
//  - the server sends the head without Content-Length and with "Connection: close"; the body ends when the
//    streamer returns, after which the server closes the connection;
//  - the streamer writes through StreamWriter::write, which takes the deadline of each write;
//  - HttpServer::stop() closes the socket, so the streamer's next write fails: the streamer must return on any
//    write error. A streamer that waits on something other than the socket delays io_context::run() returning.
//  - exceptions escaping the streamer are caught and end the stream.
class StreamWriter {
 public:
  virtual ~StreamWriter() = default;
  // Writes `data` to the connection (plain TCP or TLS) within `timeout`. False on any error or expiry: the
  // streamer must then return.
  virtual boost::asio::awaitable<bool> write(std::string_view data, std::chrono::milliseconds timeout) = 0;
};
using Streamer = std::function<boost::asio::awaitable<void>(StreamWriter&)>;

// A response body read from a file: bytes [offset, offset + length) of `path`, sent with
// Content-Length: length, in chunks, never whole in memory. If the file cannot be opened or is shorter than
// offset + length when the server starts sending, the connection is closed (the head may be out already).
struct FileBody {
  std::string path;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

// An outgoing response. The server always adds Content-Type, Content-Length (except for 204/304 and streams)
// and Server. `headers` may override Content-Type and Server; Content-Length, Transfer-Encoding and Connection
// are owned by the server and ignored here. Header names must be HTTP tokens and values must not contain CR, LF
// or NUL, otherwise the server answers 500 instead.
struct Response {
  int status = 200;                                    // 200..599; anything else becomes a 500
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  bool close = false;                                  // close the connection after this response
  Streamer streamer;                                   // if set, `body` is ignored and the streamer writes it
  std::optional<FileBody> file;                        // if set, `body` is ignored and the file's bytes are sent
};

// Serves a whole file, honouring a single "Range: bytes=A-B" / "bytes=A-" / "bytes=-N" request header:
// 200 with the whole file, 206 with Content-Range for a satisfiable range, 416 with "Content-Range: bytes */SIZE"
// otherwise (a multi-range or malformed Range header is ignored: 200, as RFC 9110 allows). Every answer has
// "Accept-Ranges: bytes". 404 {"error":"not_found"} when the file does not exist.
Response file_response(const Request& req, const std::string& path, std::string content_type);

// Response with `body` serialized as JSON. Invalid UTF-8 in strings is replaced, never thrown.
Response json_response(int status, const nlohmann::json& body);

// Response with body {"error": code, "detail": detail}, e.g. error_response(404, "not_found", "no run 5").
Response error_response(int status, std::string_view code, std::string_view detail);

// error_response(http_status(e.code), code_name(e.code), e.detail).
Response error_response(const Error& error);

// Conventional HTTP status for an error code: invalid_argument 400, not_found 404, already_exists 409,
// cancelled 409, unavailable 503, timeout 504, internal 500, ok 200.
int http_status(Code code);

// Decodes %XX escapes (and "+" as a space when `plus_as_space`). nullopt on a malformed escape.
std::optional<std::string> percent_decode(std::string_view in, bool plus_as_space);

// A request target split into its parts.
struct ParsedTarget {
  std::string raw_path;                                // path as sent, still percent-encoded
  std::string path;                                    // decoded path
  std::map<std::string, std::string> query;            // decoded query params; last one wins
};

// Parses an origin-form ("/a/b?x=1") or absolute-form ("http://host/a/b?x=1") target.
// invalid_argument when the target is neither, has a malformed escape, or decodes to a NUL byte.
Result<ParsedTarget> parse_target(std::string_view target);

}  // namespace tsum::api
