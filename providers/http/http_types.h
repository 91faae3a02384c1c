// Plain values for one HTTP exchange: what HttpClient sends and receives, and what LoopbackServer hands to
// its handler and writes back.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tsum::providers::http {

// Ordered; a name may repeat. Names compare case-insensitively.
using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

inline bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// The first value of header `name`, if any.
inline std::optional<std::string_view> find_header(const HttpHeaders& headers, std::string_view name) {
  for (const auto& [n, v] : headers)
    if (iequals(n, name)) return std::string_view(v);
  return std::nullopt;
}

struct HttpRequest {
  std::string method = "GET";
  std::string url;                           // http:// or https://
  HttpHeaders headers = {};
  std::string body = {};
  std::chrono::milliseconds timeout{30000};  // one attempt, connecting included
};

struct HttpResponse {
  int status = 0;
  HttpHeaders headers = {};
  std::string body = {};
  int attempts = 1;  // how many tries it took (HttpClient::send)

  std::optional<std::string_view> header(std::string_view name) const { return find_header(headers, name); }
};

}  // namespace tsum::providers::http
