#include "providers/http/login_env.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <set>
#include <vector>
#include <fstream>
#include <iterator>
#include <string_view>

extern char** environ;

namespace tsum::providers::http {

LoginEnvironment LoginEnvironment::current() {
  LoginEnvironment env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string_view::npos) env.vars.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  env.home = env.get("HOME");
  return env;
}

std::string LoginEnvironment::get(const std::string& name) const {
  auto it = vars.find(name);
  return it == vars.end() ? "" : it->second;
}

std::string LoginEnvironment::config_home() const {
  const std::string xdg = get("XDG_CONFIG_HOME");
  return xdg.empty() ? home + "/.config" : xdg;
}

std::string expand_home(const std::string& path, const std::string& home) {
  if (path == "~") return home;
  if (path.starts_with("~/")) return home + path.substr(1);
  return path;
}

std::string tilde(const std::string& path, const std::string& home) {
  if (!home.empty() && path.starts_with(home + "/")) return "~" + path.substr(home.size());
  return path;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(std::string_view s) {
  std::size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return std::string(s.substr(a, b - a));
}

Result<std::vector<std::pair<std::string, IniSection>>> parse_ini(std::string_view text) {
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::vector<std::string>>>>> raw;
  IniSection defaults;
  std::vector<std::pair<std::string, std::vector<std::string>>>* section = nullptr;
  std::vector<std::string>* value = nullptr;  // the option being read, for continuation lines
  std::size_t indent = 0;
  int lineno = 0;
  std::set<std::string> seen_sections;
  std::vector<std::pair<std::string, std::vector<std::string>>> default_raw;
  for (std::size_t at = 0; at <= text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string line(text.substr(at, end - at));
    at = end + 1;
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string stripped = trim(line);
    if (stripped.starts_with('#') || stripped.starts_with(';')) continue;
    if (stripped.empty()) {
      if (value) value->push_back("");
      if (end == text.size()) break;
      continue;
    }
    const std::size_t cur_indent = line.find_first_not_of(" \t\f\v");
    if (section && value && cur_indent > indent) {
      value->push_back(stripped);
      continue;
    }
    indent = cur_indent;
    const std::string where = "line " + std::to_string(lineno);
    if (stripped.front() == '[' && stripped.find(']', 1) != std::string::npos && stripped.rfind(']') > 1) {
      std::string name = stripped.substr(1, stripped.rfind(']') - 1);
      if (!seen_sections.insert(name).second) return make_error(Code::invalid_argument, where + ": section [" + name + "] again");
      if (name == "DEFAULT") {
        section = &default_raw;
      } else {
        raw.push_back({name, {}});
        section = &raw.back().second;
      }
      value = nullptr;
      continue;
    }
    if (!section) return make_error(Code::invalid_argument, where + ": a key before any [section]");
    const std::size_t delim = stripped.find_first_of("=:");
    if (delim == std::string::npos) return make_error(Code::invalid_argument, where + ": not 'key = value'");
    std::string key = lower(trim(stripped.substr(0, delim)));
    if (key.empty()) return make_error(Code::invalid_argument, where + ": no key before '" + stripped[delim] + "'");
    for (const auto& [k, _] : *section)
      if (k == key) return make_error(Code::invalid_argument, where + ": key " + key + " again in its section");
    section->push_back({key, {trim(stripped.substr(delim + 1))}});
    value = &section->back().second;
    if (end == text.size()) break;
  }
  auto join = [](const std::vector<std::string>& lines) {
    std::string v;
    for (std::size_t i = 0; i < lines.size(); ++i) v += (i ? "\n" : "") + lines[i];
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.pop_back();
    return v;
  };
  for (const auto& [k, lines] : default_raw) defaults[k] = join(lines);
  std::vector<std::pair<std::string, IniSection>> out;
  for (const auto& [name, options] : raw) {
    IniSection s = defaults;
    for (const auto& [k, lines] : options) s[k] = join(lines);
    out.push_back({name, std::move(s)});
  }
  return out;
}

std::optional<std::string> read_login_file(const std::string& path) {
  struct stat st{};
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string{std::istreambuf_iterator<char>(in), {}};
}

}  // namespace tsum::providers::http
