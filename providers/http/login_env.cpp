#include "providers/http/login_env.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
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

std::optional<std::string> read_login_file(const std::string& path) {
  struct stat st{};
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string{std::istreambuf_iterator<char>(in), {}};
}

}  // namespace tsum::providers::http
