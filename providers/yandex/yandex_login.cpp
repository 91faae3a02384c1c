#include "providers/yandex/yandex_login.h"

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

namespace tsum::providers::yandex {

namespace {

Error bad(const std::string& what) { return make_error(Code::invalid_argument, "yandex: " + what); }

// yaml-cpp throws when a node that is not a map is indexed: every lookup checks first.
std::string scalar(const YAML::Node& n, const char* key) {
  if (!n || !n.IsMap()) return {};
  const YAML::Node v = n[key];
  return v && v.IsScalar() ? v.as<std::string>() : std::string();
}

// A YAML map of scalars as JSON (the authorized key yc keeps inline), for parse_authorized_key.
std::string map_json(const YAML::Node& n) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& kv : n)
    if (kv.first.IsScalar() && kv.second.IsScalar()) out[kv.first.as<std::string>()] = kv.second.as<std::string>();
  return out.dump();
}

}  // namespace

Result<YandexLogin> resolve_yandex_login(const http::LoginEnvironment& env, const std::string& wanted) {
  YandexLogin out;
  const std::string path = env.home + "/.config/yandex-cloud/config.yaml";
  const std::string shown = http::tilde(path, env.home);
  YAML::Node profile;
  bool have_profile = false;
  std::string name = wanted;
  if (auto text = http::read_login_file(path)) {
    YAML::Node doc;
    try {
      doc = YAML::Load(*text);
    } catch (const std::exception& e) {
      return bad(shown + " is not YAML (" + e.what() + "); run 'yc init'");
    }
    if (name.empty()) name = scalar(doc, "current");
    const YAML::Node profiles = doc.IsMap() ? doc["profiles"] : YAML::Node();
    if (!name.empty()) {
      if (!profiles || !profiles.IsMap() || !profiles[name] || !profiles[name].IsMap())
        return bad("profile '" + name + "' is not in " + shown + "; run 'yc config profile create " + name + "'");
      profile = profiles[name];
      have_profile = true;
    }
  } else if (!wanted.empty()) {
    return bad("profile '" + wanted + "': " + shown + " does not exist; run 'yc init'");
  }
  out.folder_id = have_profile ? scalar(profile, "folder-id") : "";
  out.zone = have_profile ? scalar(profile, "compute-default-zone") : "";
  if (!env.get("YC_FOLDER_ID").empty()) out.folder_id = env.get("YC_FOLDER_ID");
  if (!env.get("YC_ZONE").empty()) out.zone = env.get("YC_ZONE");
  const std::string where = "yc profile " + name + " (" + shown + ", ";
  if (const std::string file = env.get("YC_SERVICE_ACCOUNT_KEY_FILE"); !file.empty()) {
    auto text = http::read_login_file(file);
    if (!text) return bad("YC_SERVICE_ACCOUNT_KEY_FILE names " + http::tilde(file, env.home) + ", which is not there; run 'yc iam key create --output FILE'");
    auto key = parse_authorized_key(*text);
    if (!key) return bad(http::tilde(file, env.home) + ": " + key.error().detail + "; run 'yc iam key create --output FILE'");
    out.credentials.key = std::move(*key);
    out.source = "YC_SERVICE_ACCOUNT_KEY_FILE (" + http::tilde(file, env.home) + ", service account " +
                 out.credentials.key.service_account_id + ")";
    return out;
  }
  if (!have_profile)
    return bad("no login: YC_SERVICE_ACCOUNT_KEY_FILE is not set and " + shown + " has no profile; run 'yc init'");
  if (const YAML::Node k = profile["service-account-key"]; k && k.IsMap()) {
    auto key = parse_authorized_key(map_json(k));
    if (!key) return bad("profile '" + name + "' in " + shown + ": service-account-key: " + key.error().detail +
                         "; run 'yc config set service-account-key KEY.json'");
    out.credentials.key = std::move(*key);
    out.source = where + "service account " + out.credentials.key.service_account_id + ")";
    return out;
  }
  if (const std::string token = scalar(profile, "token"); !token.empty()) {
    out.credentials.kind = "oauth";
    out.credentials.oauth_token = token;
    out.source = where + "OAuth token)";
    return out;
  }
  if (scalar(profile, "instance-service-account") == "true") {
    out.credentials.kind = "metadata";
    out.source = where + "the VM's service account)";
    return out;
  }
  if (!scalar(profile, "federation-id").empty())
    return bad("profile '" + name + "' in " + shown + " logs in through a federation, which needs a browser; give it a "
               "service account key ('yc config set service-account-key KEY.json')");
  return bad("profile '" + name + "' in " + shown + " has no service-account-key, token or instance-service-account; run 'yc init'");
}

}  // namespace tsum::providers::yandex
