// Guarding nlohmann::json against hostile input: its parser recurses once per nesting level, so a body of
// a million '[' would overflow the stack. Check the depth first, without parsing. And reading a document another
// service sent, where any field may be missing or of another type: nlohmann's value() throws for a field of
// another type (type_error 302) or on anything but an object (306); json_array_at and json_or never throw.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

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

// The array under `key` of object j; an empty array when j is not an object, or the field is missing or not an array.
inline const nlohmann::json& json_array_at(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  if (!j.is_object()) return kEmpty;
  auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : kEmpty;
}

// The field `key` of object j as a bool, number or string; `fallback` when j is not an object, or the field is
// missing or of another kind. An integral T takes integers only: a double out of its range would be undefined.
template <class T>
T json_or(const nlohmann::json& j, const char* key, T fallback) {
  static_assert(std::is_arithmetic_v<T> || std::is_same_v<T, std::string>);
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  if (it == j.end()) return fallback;
  bool fits = false;
  if constexpr (std::is_same_v<T, bool>) fits = it->is_boolean();
  else if constexpr (std::is_integral_v<T>) fits = it->is_number_integer();
  else if constexpr (std::is_floating_point_v<T>) fits = it->is_number();
  else fits = it->is_string();
  return fits ? it->template get<T>() : fallback;
}

// The string field `key` of object j; empty when j is not an object, or the field is missing or not a string.
inline std::string json_str(const nlohmann::json& j, const char* key) { return json_or<std::string>(j, key, {}); }

}  // namespace tsum
