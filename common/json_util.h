// Guarding nlohmann::json against hostile input: its parser recurses once per nesting level, so a body of
// a million '[' would overflow the stack. Check the depth first, without parsing.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

namespace tsum {

inline bool json_depth_ok(std::string_view text, int max_depth = 64) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

// Parses text as JSON; nullopt when it is malformed or nested deeper than max_depth.
inline std::optional<nlohmann::json> parse_json_safely(std::string_view text, int max_depth = 64) {
  if (!json_depth_ok(text, max_depth)) return std::nullopt;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

}  // namespace tsum
