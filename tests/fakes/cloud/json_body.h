// Reading the JSON bodies the fakes get without throwing: parsed with a depth guard (common/json_util.h) so a
// hostile body cannot overflow the stack, and fields read with a fallback where they are missing or of
// another type.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace tsum::providers::fake_cloud {

// The body as JSON; discarded (is_discarded(), not an object) when it is malformed or nested too deep.
nlohmann::json parse_body(std::string_view body);

// The string at key; "" when j is not an object, or the value is absent or not a string.
std::string text_at(const nlohmann::json& j, const char* key);

// The value at the path of keys; null when a step is missing or not an object.
const nlohmann::json& value_at(const nlohmann::json& j, std::initializer_list<const char*> path);

}  // namespace tsum::providers::fake_cloud
