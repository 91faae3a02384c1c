#include "tests/fakes/cloud/json_body.h"

#include "common/json_util.h"

namespace tsum::providers::fake_cloud {

nlohmann::json parse_body(std::string_view body) {
  return parse_json_safely(body).value_or(nlohmann::json(nlohmann::json::value_t::discarded));
}

std::string text_at(const nlohmann::json& j, const char* key) {
  auto it = j.is_object() ? j.find(key) : j.end();
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

const nlohmann::json& value_at(const nlohmann::json& j, std::initializer_list<const char*> path) {
  static const nlohmann::json kNull;
  const nlohmann::json* cur = &j;
  for (const char* key : path) {
    if (!cur->is_object() || !cur->contains(key)) return kNull;
    cur = &(*cur)[key];
  }
  return *cur;
}

}  // namespace tsum::providers::fake_cloud
