#include "api/http/router.h"

#include <cctype>
#include <exception>
#include <set>
#include <stdexcept>

namespace tsum::api {
namespace {

// "/a/b/c" -> {"a","b","c"}; "/" -> {}; "/a/" -> {"a",""}. `path` starts with "/".
std::vector<std::string_view> split_segments(std::string_view path) {
  std::vector<std::string_view> out;
  if (path.size() <= 1) return out;
  path.remove_prefix(1);
  while (true) {
    std::size_t slash = path.find('/');
    out.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

// Decoded path segments of the request. Splitting the raw path before decoding keeps "%2F" inside a segment.
std::optional<std::vector<std::string>> request_segments(const Request& req) {
  std::vector<std::string> out;
  if (req.target.empty()) {
    for (std::string_view s : split_segments(req.path)) out.emplace_back(s);
    return out;
  }
  auto parsed = parse_target(req.target);
  if (!parsed) return std::nullopt;
  for (std::string_view s : split_segments(parsed->raw_path)) {
    auto decoded = percent_decode(s, false);
    if (!decoded) return std::nullopt;
    out.push_back(std::move(*decoded));
  }
  return out;
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

void Router::add(std::string method, std::string pattern, Handler h, RouteOptions options) {
  if (pattern.empty() || pattern.front() != '/') {
    throw std::invalid_argument("route pattern must start with '/': " + pattern);
  }
  Route route;
  route.method = upper(std::move(method));
  for (std::string_view s : split_segments(pattern)) {
    Segment seg;
    if (s.size() >= 2 && s.front() == '{' && s.back() == '}') {
      seg.text = std::string(s.substr(1, s.size() - 2));
      seg.is_param = true;
      if (seg.text.empty() || seg.text.find_first_of("{}") != std::string::npos) {
        throw std::invalid_argument("bad parameter in route pattern: " + pattern);
      }
    } else {
      if (s.find_first_of("{}") != std::string_view::npos) {
        throw std::invalid_argument("brace inside a literal segment of route pattern: " + pattern);
      }
      seg.text = std::string(s);
    }
    route.segments.push_back(std::move(seg));
  }
  for (const Route& r : routes_) {
    if (r.method == route.method && r.pattern == pattern) {
      throw std::invalid_argument("duplicate route: " + route.method + " " + pattern);
    }
  }
  route.pattern = std::move(pattern);
  route.handler = std::move(h);
  route.options = options;
  routes_.push_back(std::move(route));
}

const RouteOptions* Router::options_for(std::string_view method, std::string_view target) const {
  Request req;
  req.target = std::string(target);
  auto segments = request_segments(req);
  if (!segments) return nullptr;
  const Route* best = nullptr;
  for (const Route& route : routes_) {
    if (route.method != method || !match(route, *segments, nullptr)) continue;
    if (best == nullptr || more_specific(route, *best)) best = &route;
  }
  return best == nullptr ? nullptr : &best->options;
}

bool Router::match(const Route& route, const std::vector<std::string>& segments,
                   std::map<std::string, std::string>* params) {
  if (route.segments.size() != segments.size()) return false;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const Segment& seg = route.segments[i];
    if (seg.is_param ? segments[i].empty() : seg.text != segments[i]) return false;
  }
  if (params) {
    for (std::size_t i = 0; i < segments.size(); ++i) {
      if (route.segments[i].is_param) (*params)[route.segments[i].text] = segments[i];
    }
  }
  return true;
}

bool Router::more_specific(const Route& a, const Route& b) {
  for (std::size_t i = 0; i < a.segments.size() && i < b.segments.size(); ++i) {
    if (a.segments[i].is_param != b.segments[i].is_param) return !a.segments[i].is_param;
  }
  return false;
}

boost::asio::awaitable<Response> Router::dispatch(Request& req) const {
  auto segments = request_segments(req);
  if (!segments) co_return error_response(400, "invalid_argument", "malformed request target");

  const Route* best = nullptr;
  std::set<std::string> allowed;
  for (const Route& route : routes_) {
    if (!match(route, *segments, nullptr)) continue;
    allowed.insert(route.method);
    if (route.method == req.method && (best == nullptr || more_specific(route, *best))) best = &route;
  }
  if (best == nullptr && allowed.empty()) {
    co_return error_response(404, "not_found", "no route for " + req.method + " " + req.path);
  }
  if (best == nullptr) {
    std::string allow;
    for (const std::string& m : allowed) allow += (allow.empty() ? "" : ", ") + m;
    Response res = error_response(405, "invalid_argument", "method " + req.method + " not allowed; allowed: " + allow);
    res.headers.emplace_back("Allow", allow);
    co_return res;
  }

  req.params.clear();
  match(*best, *segments, &req.params);
  std::string failure;
  try {
    co_return co_await best->handler(req);
  } catch (const std::exception& e) {
    failure = e.what();
  } catch (...) {
    failure = "unknown exception";
  }
  co_return error_response(500, "internal", "handler for " + best->method + " " + best->pattern + " failed: " + failure);
}

std::vector<std::pair<std::string, std::string>> Router::routes() const {
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(routes_.size());
  for (const Route& r : routes_) out.emplace_back(r.method, r.pattern);
  return out;
}

}  // namespace tsum::api
