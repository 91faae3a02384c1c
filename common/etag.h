// Strong HTTP ETags: a quoted FNV-1a hash (64 bits) of a body, and the If-None-Match check (RFC 9110 weak
// comparison is not needed: every ETag here is strong and comes from this function).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace tsum {

inline std::string etag_of(std::string_view data) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : data) h = (h ^ c) * 1099511628211ull;
  char buf[24];
  std::snprintf(buf, sizeof buf, "\"%016llx\"", static_cast<unsigned long long>(h));
  return buf;
}

// True when an If-None-Match header value ("*", or a list of ETags) names `etag`.
inline bool etag_matches(std::string_view if_none_match, std::string_view etag) {
  return if_none_match == "*" || if_none_match.find(etag) != std::string_view::npos;
}

}  // namespace tsum
