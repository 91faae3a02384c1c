#include "api/cli/cli_http.h"

#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/http/http_client.h"
#include "common/json_util.h"

namespace tsum::api {

using nlohmann::json;

std::string default_config_path() {
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg) return std::string(xdg) + "/tsum/client.json";
  const char* home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.config/tsum/client.json";
}

Result<ClientConfig> parse_url(const std::string& url) {
  auto bad = [&](const std::string& why) { return make_error(Code::invalid_argument, "URL '" + url + "': " + why); };
  constexpr std::string_view kScheme = "http://";
  if (url.rfind(kScheme, 0) != 0) return bad("must start with http:// (tsumd serves plain HTTP)");
  std::string rest = url.substr(kScheme.size());
  ClientConfig c;
  c.url = url;
  auto slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  if (slash != std::string::npos) c.base_path = rest.substr(slash);
  while (!c.base_path.empty() && c.base_path.back() == '/') c.base_path.pop_back();
  std::string port_text;
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string::npos) return bad("unclosed '[' in the host");
    c.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return bad("expected ':' after ']'");
      port_text = authority.substr(close + 2);
    }
  } else {
    auto colon = authority.rfind(':');
    c.host = authority.substr(0, colon);
    if (colon != std::string::npos) port_text = authority.substr(colon + 1);
  }
  if (c.host.empty()) return bad("no host");
  if (!port_text.empty() || authority.find(':') != std::string::npos) {
    int port = 0;
    auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (port_text.empty() || ec != std::errc() || p != port_text.data() + port_text.size() || port < 1 || port > 65535)
      return bad("the port must be a number from 1 to 65535");
    c.port = static_cast<uint16_t>(port);
  }
  return c;
}

namespace {

// The config file's url and token; both empty when the file does not exist.
Result<std::pair<std::string, std::string>> read_config_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::pair<std::string, std::string>{};
  std::ifstream in(path);
  if (!in) return make_error(Code::invalid_argument, "cannot read config file " + path);
  std::stringstream text;
  text << in.rdbuf();
  auto j = parse_json_safely(text.str());
  if (!j || !j->is_object()) return make_error(Code::invalid_argument, "config file " + path + " is not a JSON object");
  std::pair<std::string, std::string> out;
  for (const auto& [key, v] : j->items()) {
    if (key != "url" && key != "token")
      return make_error(Code::invalid_argument, "config file " + path + ": unknown field '" + key + "'");
    if (!v.is_string())
      return make_error(Code::invalid_argument, "config file " + path + ": '" + key + "' must be a string");
  }
  out.first = j->value("url", "");
  out.second = j->value("token", "");
  return out;
}

}  // namespace

Result<ClientConfig> resolve_config(const std::optional<std::string>& url_flag,
                                    const std::optional<std::string>& token_flag,
                                    const std::function<const char*(const char*)>& env,
                                    const std::string& config_path) {
  auto file = read_config_file(config_path);
  if (!file) return file.error();
  auto pick = [&](const std::optional<std::string>& flag, const char* var, const std::string& from_file) {
    if (flag) return *flag;
    if (const char* v = env(var); v && *v) return std::string(v);
    return from_file;
  };
  std::string url = pick(url_flag, "TSUM_URL", file->first);
  auto c = parse_url(url.empty() ? "http://127.0.0.1:8080" : url);
  if (!c) return c.error();
  c->token = pick(token_flag, "TSUM_TOKEN", file->second);
  return c;
}

std::string Reply::detail() const {
  if (!json.is_discarded() && json.is_object() && json.contains("detail") && json["detail"].is_string())
    return json["detail"].get<std::string>();
  return body.empty() ? "HTTP " + std::to_string(status) : body;
}

ExitCode exit_code_for(int http_status) {
  if (http_status == 401 || http_status == 403) return kExitAuth;
  if (http_status == 404) return kExitNotFound;
  if (http_status == 400 || http_status == 413 || http_status == 422) return kExitUsage;
  return kExitFailure;
}

Result<Reply> CliHttp::call(const std::string& method, const std::string& target, const std::string& body) {
  HttpConnection conn(timeout_);
  if (!conn.connect(config_.host, config_.port))
    return make_error(Code::unavailable, "cannot reach tsumd at " + config_.url + " (" + conn.last_error() + ")");
  Headers headers;
  if (!config_.token.empty()) headers.push_back({"Authorization", "Bearer " + config_.token});
  if (!body.empty()) headers.push_back({"Content-Type", "application/json"});
  auto r = conn.call(method, config_.base_path + target, body, headers);
  if (!r.ok()) return make_error(Code::unavailable, "tsumd at " + config_.url + " did not answer (" + r.error + ")");
  Reply out{r.status, r.body, r.json()};
  return out;
}

}  // namespace tsum::api
