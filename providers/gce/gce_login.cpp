#include "providers/gce/gce_login.h"

#include "common/json_util.h"

namespace tsum::providers::gce {

namespace {

Error bad(const std::string& what) { return make_error(Code::invalid_argument, "gce: " + what); }

std::string text(const nlohmann::json& j, const char* name) {
  auto it = j.find(name);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// gcloud's project: CLOUDSDK_CORE_PROJECT, else the active configuration's [core] project. Sets *from.
std::string gcloud_project(const http::LoginEnvironment& env, const std::string& config_dir, std::string* from) {
  if (const std::string p = env.get("CLOUDSDK_CORE_PROJECT"); !p.empty()) {
    *from = "CLOUDSDK_CORE_PROJECT";
    return p;
  }
  std::string name = env.get("CLOUDSDK_ACTIVE_CONFIG_NAME");
  if (name.empty())
    if (auto active = http::read_login_file(config_dir + "/active_config")) name = http::trim(*active);
  if (name.empty()) name = "default";
  const std::string path = config_dir + "/configurations/config_" + name;
  auto file = http::read_login_file(path);
  if (!file) return "";
  auto ini = http::parse_ini(*file);
  if (!ini) return "";
  for (const auto& [section, keys] : *ini)
    if (section == "core")
      if (auto it = keys.find("project"); it != keys.end() && !it->second.empty()) {
        *from = "gcloud configuration " + name + " (" + http::tilde(path, env.home) + ")";
        return it->second;
      }
  return "";
}

std::string host_of(const http::LoginEnvironment& env, const char* var, const char* dflt) {
  const std::string v = env.get(var);
  return v.empty() ? dflt : v;
}

}  // namespace

Result<GceCredentials> parse_credentials_file(std::string_view json) {
  auto doc = parse_json_safely(json);
  if (!doc || !doc->is_object()) return make_error(Code::invalid_argument, "not a JSON object");
  const std::string type = text(*doc, "type");
  GceCredentials c;
  if (type == "service_account") {
    auto sa = parse_service_account(json);
    if (!sa) return sa.error();
    c.account = std::move(*sa);
    return c;
  }
  if (type == "authorized_user") {
    c.kind = type;
    c.user = {text(*doc, "client_id"), text(*doc, "client_secret"), text(*doc, "refresh_token")};
    for (auto [value, name] : {std::pair{&c.user.client_id, "client_id"}, {&c.user.client_secret, "client_secret"},
                               {&c.user.refresh_token, "refresh_token"}})
      if (value->empty()) return make_error(Code::invalid_argument, std::string("an authorized user without ") + name);
    return c;
  }
  return make_error(Code::invalid_argument, "type is \"" + type + "\", not \"service_account\" or \"authorized_user\"");
}

Result<GceLogin> resolve_gce_login(const http::LoginEnvironment& env) {
  GceLogin out;
  const std::string config_dir =
      env.get("CLOUDSDK_CONFIG").empty() ? env.home + "/.config/gcloud" : env.get("CLOUDSDK_CONFIG");
  const std::string adc = config_dir + "/application_default_credentials.json";
  out.adc_file = http::tilde(adc, env.home);
  std::string path, via;
  if (env.has("GOOGLE_APPLICATION_CREDENTIALS")) {
    path = env.get("GOOGLE_APPLICATION_CREDENTIALS");
    via = "GOOGLE_APPLICATION_CREDENTIALS";
    if (!http::read_login_file(path))
      return bad("GOOGLE_APPLICATION_CREDENTIALS names " + (path.empty() ? std::string("no file") : http::tilde(path, env.home)) +
                 ", which is not there; point it at a key file, or unset it and run 'gcloud auth application-default login'");
  } else if (http::read_login_file(adc)) {
    path = adc;
    via = "gcloud's application default login";
  }
  if (!path.empty()) {
    auto file = http::read_login_file(path);
    auto c = file ? parse_credentials_file(*file) : make_error(Code::invalid_argument, "cannot be read");
    if (!c)
      return bad(http::tilde(path, env.home) + ": " + c.error().detail +
                 "; run 'gcloud auth application-default login' or download the key again");
    out.credentials = std::move(*c);
    const bool user = out.credentials.kind == "authorized_user";
    out.source = via + " (" + http::tilde(path, env.home) + ", " +
                 (user ? "user, client " + out.credentials.user.client_id
                       : "service account " + out.credentials.account.client_email) + ")";
    if (!user && !out.credentials.account.project_id.empty()) {
      out.project = out.credentials.account.project_id;
      out.project_from = "the key file";
    }
  } else {
    out.credentials.kind = "metadata";
    out.credentials.metadata_host = host_of(env, "GCE_METADATA_ROOT", "metadata.google.internal");
    out.credentials.metadata_ping_host = host_of(env, "GCE_METADATA_IP", "169.254.169.254");
    out.source = "the metadata server (" + out.credentials.metadata_host + ")";
  }
  for (const char* var : {"GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT"})
    if (!env.get(var).empty()) {
      out.project = env.get(var);
      out.project_from = var;
      return out;
    }
  if (out.project.empty() && out.credentials.kind != "metadata") out.project = gcloud_project(env, config_dir, &out.project_from);
  return out;
}

Task<Result<std::string>> metadata_project(http::HttpClient& http, const GceLogin& login) {
  const GceCredentials& c = login.credentials;
  const http::HttpRequest ping{.method = "GET", .url = "http://" + c.metadata_ping_host + "/",
                               .headers = {{"Metadata-Flavor", "Google"}}, .timeout = std::chrono::seconds(3)};
  auto found = co_await http.send_once(ping);
  auto flavor = found ? found->header("Metadata-Flavor") : std::nullopt;
  if (!found || found->status != 200 || !flavor || *flavor != "Google")
    co_return make_error(Code::unavailable,
                         "gce: no login found (GOOGLE_APPLICATION_CREDENTIALS is not set, " + login.adc_file +
                             " does not exist, and no metadata server answers at " + c.metadata_ping_host +
                             "); run 'gcloud auth application-default login'");
  const http::HttpRequest get{.method = "GET", .url = "http://" + c.metadata_host + "/computeMetadata/v1/project/project-id",
                              .headers = {{"Metadata-Flavor", "Google"}}, .timeout = std::chrono::seconds(3)};
  auto project = co_await http.send_once(get);
  if (!project || project->status != 200) co_return std::string();  // google-auth: no project, still a login
  co_return project->body;
}

}  // namespace tsum::providers::gce
