// Router: maps (method, path pattern) to a Handler.
//
// Patterns are absolute paths whose segments are literals or `{name}` parameters, e.g. "/v1/runs/{id}/events".
// A parameter matches exactly one non-empty segment; its percent-decoded value lands in Request::params.
// Matching is exact (no prefix match; "/v1/runs/" does not match "/v1/runs").
//
// dispatch() picks, among routes whose pattern matches the path and whose method equals the request's, the most
// specific one: comparing segment by segment from the left, a literal beats a parameter. So "/v1/runs/latest"
// wins over "/v1/runs/{id}" regardless of registration order. Otherwise:
//   - no pattern matches the path           -> 404 {"error":"not_found"}
//   - a pattern matches, the method doesn't -> 405 {"error":"invalid_argument"} with "Allow: GET, POST"
//   - the handler throws                    -> 500 {"error":"internal"}; the exception never escapes dispatch().
//
// Routes are added at startup, before the server starts; add() is not safe to call concurrently with dispatch().
#pragma once

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <functional>
#include <string_view>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "api/http/http_types.h"

namespace tsum::api {

using Handler = std::function<boost::asio::awaitable<Response>(Request&)>;

struct RouteOptions {
  // Stream the request body to a file (Request::body_file) instead of memory, for uploads.
  bool body_to_file = false;
  // Largest body this route accepts; 0: ServerOptions::body_limit (in memory) or upload_limit (to a file).
  // Past it: 413 and the connection is closed.
  std::uint64_t body_limit = 0;
  // The handler touches nothing that belongs to the daemon's event loop (no database connection, no run state;
  // only what is safe from any thread): it runs on the connection's own thread (HttpServer with a network
  // io_context) instead of hopping to the event loop and back. GET /healthz.
  bool any_thread = false;
};

class Router {
 public:
  // Registers `h` for `method` (upper-cased) and `pattern`. A malformed pattern (not starting with "/", an
  // empty or unclosed "{...}", a brace inside a literal) or a duplicate (method, pattern) is a programming
  // error: throws std::invalid_argument, so a bad route table fails at startup.
  void add(std::string method, std::string pattern, Handler h, RouteOptions options = {});

  // The options of the route dispatch() would pick for (method, target); nullptr when none matches. The server
  // asks this after reading a request's head, to decide where its body goes.
  const RouteOptions* options_for(std::string_view method, std::string_view target) const;

  // Routes `req` by req.target's path (or req.path when target is empty), fills req.params and runs the
  // handler. Never throws for handler errors; see the file comment for the error responses.
  boost::asio::awaitable<Response> dispatch(Request& req) const;

  // (method, pattern) pairs in registration order, for docs/OpenAPI.
  std::vector<std::pair<std::string, std::string>> routes() const;

 private:
  struct Segment {
    std::string text;   // literal text, or the parameter name
    bool is_param = false;
  };
  struct Route {
    std::string method;
    std::string pattern;
    std::vector<Segment> segments;
    Handler handler;
    RouteOptions options;
  };

  // Fills `params` and returns true when `route` matches the decoded path `segments`.
  static bool match(const Route& route, const std::vector<std::string>& segments,
                    std::map<std::string, std::string>* params);
  // True when `a` is more specific than `b` (both matched the same path).
  static bool more_specific(const Route& a, const Route& b);

  std::vector<Route> routes_;
};

}  // namespace tsum::api
