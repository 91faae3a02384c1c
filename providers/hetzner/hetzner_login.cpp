#include "providers/hetzner/hetzner_login.h"

#include <toml++/toml.h>

namespace tsum::providers::hetzner {

namespace {

Error bad(const std::string& what) { return make_error(Code::invalid_argument, "hetzner: " + what); }

template <class View>
std::string text_at(const View& n) {
  return n.value_or(std::string());
}

}  // namespace

Result<HetznerLogin> resolve_hetzner_login(const http::LoginEnvironment& env, const std::string& wanted) {
  const std::string path = env.has("HCLOUD_CONFIG") && !env.get("HCLOUD_CONFIG").empty()
                               ? http::expand_home(env.get("HCLOUD_CONFIG"), env.home)
                               : env.config_home() + "/hcloud/cli.toml";
  const std::string shown = http::tilde(path, env.home);
  toml::table file;
  const auto text = http::read_login_file(path);
  if (text) {
    try {
      file = toml::parse(*text, path);
    } catch (const toml::parse_error& e) {
      return bad(shown + " is not TOML (line " + std::to_string(e.source().begin.line) + ": " +
                 std::string(e.description()) + "); fix it or run 'hcloud context create NAME'");
    }
  }
  HetznerLogin out;
  std::string context = wanted.empty() ? env.get("HCLOUD_CONTEXT") : wanted;
  if (context.empty()) context = text_at(file["active_context"]);
  const toml::table* active = nullptr;
  if (const auto* contexts = file["contexts"].as_array())
    for (const auto& c : *contexts)
      if (const auto* t = c.as_table(); t && (*t)["name"].value_or(std::string()) == context && !context.empty()) {
        active = t;
        break;
      }
  out.endpoint = text_at(file["preferences"]["endpoint"]);
  if (active) {
    out.context = context;
    if (auto e = text_at((*active)["preferences"]["endpoint"]); !e.empty()) out.endpoint = e;
  }
  if (!env.get("HCLOUD_ENDPOINT").empty()) out.endpoint = env.get("HCLOUD_ENDPOINT");
  // HCLOUD_TOKEN wins over the file, but not over a context tsum's config names.
  if (!env.get("HCLOUD_TOKEN").empty() && wanted.empty()) {
    out.token = env.get("HCLOUD_TOKEN");
    out.context.clear();
    out.source = "HCLOUD_TOKEN";
    return out;
  }
  if (!context.empty() && !active) {
    std::string names;
    if (const auto* contexts = file["contexts"].as_array())
      for (const auto& c : *contexts)
        if (const auto* t = c.as_table()) names += (names.empty() ? "" : ", ") + (*t)["name"].value_or(std::string("?"));
    return bad("context '" + context + "' is not in " + shown + (text ? "" : " (no such file)") +
               (names.empty() ? "" : " (it has " + names + ")") + "; run 'hcloud context create " + context + "'");
  }
  if (!active)
    return bad("no login: HCLOUD_TOKEN is not set and " + shown + (text ? " has no active context" : " does not exist") +
               "; run 'hcloud context create NAME' or set HCLOUD_TOKEN");
  out.token = text_at((*active)["token"]);
  if (out.token.empty())
    return bad("context '" + context + "' in " + shown + " has no token; run 'hcloud context create " + context + "' again");
  out.source = "context " + context + " (" + shown + ")";
  return out;
}

}  // namespace tsum::providers::hetzner
