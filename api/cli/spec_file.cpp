#include "api/cli/spec_file.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "common/json_util.h"

namespace tsum::api {

using nlohmann::json;

namespace {

Error at(const std::string& name, size_t line, size_t column, const std::string& what) {
  return make_error(Code::invalid_argument, name + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " +
                                                what);
}

// A plain YAML scalar as YAML 1.2's core schema reads it: null, a boolean, an integer, a float, else a string.
json plain_scalar(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  const char* end = s.data() + s.size();
  int64_t i = 0;
  if (auto [p, ec] = std::from_chars(s.data() + (s[0] == '+'), end, i); ec == std::errc() && p == end) return i;
  double d = 0;
  if (auto [p, ec] = std::from_chars(s.data() + (s[0] == '+'), end, d); ec == std::errc() && p == end &&
                                                                         std::isfinite(d))
    return d;
  return s;
}

// Depth-limited as parse_json_safely is: a spec is a few levels deep.
Result<json> to_json(const YAML::Node& n, const std::string& name, int depth) {
  const auto mark = n.Mark();
  if (depth > 64) return at(name, mark.line + 1, mark.column + 1, "nested more than 64 levels");
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: return json(nullptr);
    case YAML::NodeType::Scalar: return n.Tag() == "!" ? json(n.Scalar()) : plain_scalar(n.Scalar());
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const auto& item : n) {
        auto v = to_json(item, name, depth + 1);
        if (!v) return v.error();
        out.push_back(std::move(*v));
      }
      return out;
    }
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& kv : n) {
        if (!kv.first.IsScalar())
          return at(name, kv.first.Mark().line + 1, kv.first.Mark().column + 1, "a key must be a plain name");
        auto v = to_json(kv.second, name, depth + 1);
        if (!v) return v.error();
        out[kv.first.Scalar()] = std::move(*v);
      }
      return out;
    }
  }
  return json(nullptr);
}

}  // namespace

Result<json> parse_spec(const std::string& text, const std::string& name) {
  const bool yaml = name.ends_with(".yaml") || name.ends_with(".yml");
  if (yaml) {
    try {
      return to_json(YAML::Load(text), name, 0);
    } catch (const YAML::Exception& e) {
      return at(name, e.mark.line + 1, e.mark.column + 1, "not valid YAML: " + e.msg);
    }
  }
  if (auto j = parse_json_safely(text)) return *j;
  // Where it broke: nlohmann's parser says at which byte.
  size_t byte = text.size();
  std::string why = "not valid JSON";
  try {
    (void)json::parse(text);
    why = "nested more than 64 levels";
  } catch (const json::parse_error& e) {
    byte = e.byte == 0 ? 0 : e.byte - 1;
    // "[json.exception.parse_error.101] parse error at line 2, column 24: syntax error while parsing value -
    // invalid literal; last read: '"a": m'": what follows the position (which this message gives as its own).
    const std::string what = e.what();
    const size_t column = what.find(", column ");
    const size_t from = column == std::string::npos ? std::string::npos : what.find(": ", column);
    why = "not valid JSON: " + (from == std::string::npos ? what : what.substr(from + 2));
  }
  byte = std::min(byte, text.size());
  const size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<long>(byte), '\n'));
  const size_t line_start = text.rfind('\n', byte == 0 ? 0 : byte - 1);
  const size_t column = line_start == std::string::npos || byte == 0 ? byte + 1 : byte - line_start;
  return at(name, line, column, why);
}

}  // namespace tsum::api
