// The pieces every section of the config file is read with (daemon/config/config.cpp, daemon/config/cloud_config.cpp):
// Fields takes a JSON object's fields one by one, so whatever is left over is an unknown field, and every
// error names the field by its path.
#pragma once

#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"

namespace tsum::daemon::config_detail {

using nlohmann::json;

// A path the config file names, relative to the file's folder `dir` unless absolute (or empty).
inline std::string absolute_in(const std::string& dir, const std::string& path) {
  return path.empty() || path[0] == '/' ? path : dir + "/" + path;
}

// The fields of one JSON object, taken one by one; whatever is left over is an unknown field.
class Fields {
 public:
  Fields(const json& j, std::string path) : j_(j), path_(std::move(path)) {}

  Status is_object() const {
    if (!j_.is_object()) return bad(path_, "must be an object");
    return {};
  }
  static Error bad(const std::string& path, const std::string& what) {
    return make_error(Code::invalid_argument, path + ": " + what);
  }
  std::string at(const std::string& key) const { return path_ + "." + key; }
  bool has(const std::string& key) const { return j_.contains(key); }
  const json& raw(const std::string& key) {
    seen_.insert(key);
    return j_.at(key);
  }

  Status text(const std::string& key, std::string* out, bool required = false) {
    if (!has(key)) return required ? Status(bad(at(key), "is required")) : Status();
    const auto& v = raw(key);
    if (!v.is_string()) return bad(at(key), "must be a string");
    *out = v.get<std::string>();
    if (required && out->empty()) return bad(at(key), "must not be empty");
    return {};
  }
  Status boolean(const std::string& key, bool* out) {
    if (!has(key)) return {};
    const auto& v = raw(key);
    if (!v.is_boolean()) return bad(at(key), "must be true or false");
    *out = v.get<bool>();
    return {};
  }
  Status integer(const std::string& key, int* out, int min, int max, bool required = false) {
    if (!has(key)) return required ? Status(bad(at(key), "is required")) : Status();
    const auto& v = raw(key);
    if (!v.is_number_integer() || v.get<int64_t>() < min || v.get<int64_t>() > max)
      return bad(at(key), "must be an integer from " + std::to_string(min) + " to " + std::to_string(max));
    *out = v.get<int>();
    return {};
  }
  Status number(const std::string& key, double* out, bool required = false) {
    if (!has(key)) return required ? Status(bad(at(key), "is required")) : Status();
    const auto& v = raw(key);
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
      return bad(at(key), "must be a number >= 0");
    *out = v.get<double>();
    return {};
  }
  Status seconds(const std::string& key, std::chrono::seconds* out) {
    int s = static_cast<int>(out->count());
    if (auto st = integer(key, &s, 1, 86400); !st) return st;
    *out = std::chrono::seconds(s);
    return {};
  }
  Status strings(const std::string& key, std::vector<std::string>* out) {
    if (!has(key)) return {};
    const auto& v = raw(key);
    if (!v.is_array()) return bad(at(key), "must be an array of strings");
    out->clear();
    for (const auto& e : v) {
      if (!e.is_string() || e.get<std::string>().empty()) return bad(at(key), "must be an array of non-empty strings");
      out->push_back(e.get<std::string>());
    }
    return {};
  }
  Status no_unknown() const {
    for (const auto& [k, _] : j_.items())
      if (!seen_.count(k)) return bad(at(k), "unknown field");
    return {};
  }

 private:
  const json& j_;
  std::string path_;
  std::set<std::string> seen_;
};

inline bool safe_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
  return s[0] != '.' && s[0] != '-';
}

inline bool safe_path(const std::string& s) {
  if (s.size() < 2 || s[0] != '/') return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && !strchr("/_.-", c)) return false;
  return s.find("..") == std::string::npos;
}

// invalid_argument unless `path` is a regular file without any of the `forbidden` mode bits; `why` says why.
inline Status check_mode(const std::string& path, mode_t forbidden, const std::string& why) {
  struct stat st{};
  if (stat(path.c_str(), &st) != 0) return make_error(Code::invalid_argument, path + ": " + strerror(errno));
  if (!S_ISREG(st.st_mode)) return make_error(Code::invalid_argument, path + ": not a regular file");
  if (st.st_mode & forbidden) {
    char mode[8];
    snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return make_error(Code::invalid_argument, path + " has mode " + mode + ": " + why);
  }
  return {};
}


}  // namespace tsum::daemon::config_detail
