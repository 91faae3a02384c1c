// The command-line client's connection to a running tsumd: where it is and which token to send, and one
// synchronous call at a time over api/http/http_client.h (every call has a deadline).
//
// The URL and the token each come from, in this order: the --url/--token flags, the TSUM_URL/TSUM_TOKEN
// environment variables, the config file ($XDG_CONFIG_HOME/tsum/client.json, else ~/.config/tsum/client.json,
// {"url": "http://127.0.0.1:8080", "token": "tsum_..."}). The URL defaults to http://127.0.0.1:8080.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/result.h"

namespace tsum::api {

// The client's exit codes (docs/cli.md).
enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,      // anything else: a conflict, a daemon error, runs that failed, a wait that timed out
  kExitUsage = 2,        // bad command line or bad input (a spec file that is missing or invalid, a 400/422)
  kExitNotFound = 3,     // no such experiment, run, schedule or token (404)
  kExitAuth = 4,         // missing, wrong or revoked token (401)
  kExitUnreachable = 5,  // no daemon answers at the URL
};

struct ClientConfig {
  std::string url;        // as given, for messages
  std::string host;
  uint16_t port = 8080;
  std::string base_path;  // "" or "/prefix", prepended to every route
  std::string token;      // may be empty: the daemon then answers 401
};

// Where the config file is by default.
std::string default_config_path();

// http://HOST[:PORT][/PREFIX] (IPv6 hosts in brackets). invalid_argument naming what is wrong.
Result<ClientConfig> parse_url(const std::string& url);

// The URL and token by precedence (see the file comment). `env` looks up an environment variable (nullptr when
// unset). A config file that exists but is unreadable or malformed is invalid_argument naming it.
Result<ClientConfig> resolve_config(const std::optional<std::string>& url_flag,
                                    const std::optional<std::string>& token_flag,
                                    const std::function<const char*(const char*)>& env,
                                    const std::string& config_path);

struct Reply {
  int status = 0;
  std::string body;
  nlohmann::json json;  // discarded when the body is not JSON
  bool ok() const { return status >= 200 && status < 300; }
  // The daemon's error detail, or the body, for messages.
  std::string detail() const;
};

// The exit code for a daemon's non-2xx status.
ExitCode exit_code_for(int http_status);

class CliHttp {
 public:
  explicit CliHttp(ClientConfig config, std::chrono::milliseconds timeout = std::chrono::seconds(60))
      : config_(std::move(config)), timeout_(timeout) {}

  // One request. unavailable when the daemon cannot be reached or the exchange fails.
  Result<Reply> call(const std::string& method, const std::string& target, const std::string& body = "");

  const ClientConfig& config() const { return config_; }

 private:
  ClientConfig config_;
  std::chrono::milliseconds timeout_;
};

}  // namespace tsum::api
