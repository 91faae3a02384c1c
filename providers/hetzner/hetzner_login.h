// The Hetzner Cloud login a user already has, found as the hcloud CLI finds it (its internal/state/config):
//   token     HCLOUD_TOKEN, else the active context's `token` in the CLI's file
//   file      HCLOUD_CONFIG, else $XDG_CONFIG_HOME/hcloud/cli.toml (~/.config/hcloud/cli.toml)
//   context   a `context` named in tsum's config, else HCLOUD_CONTEXT, else the file's active_context; one of
//             its [[contexts]] (name, token, preferences)
//   endpoint  HCLOUD_ENDPOINT, else the context's preferences.endpoint, else the file's [preferences] endpoint
// The file is TOML (`hcloud context create NAME` writes it); toml++ reads it.
#pragma once

#include <string>

#include "common/result.h"
#include "providers/http/login_env.h"

namespace tsum::providers::hetzner {

struct HetznerLogin {
  std::string token;
  std::string endpoint;  // "" when none is set: the API's own
  std::string context;   // the context used; "" for HCLOUD_TOKEN
  std::string source;    // what it came from, for messages: "HCLOUD_TOKEN", "context work (~/.config/hcloud/cli.toml)"
};

// invalid_argument with where it looked and the fix: no token anywhere, a context not in the file, a file
// that is not TOML, a context without a token.
Result<HetznerLogin> resolve_hetzner_login(const http::LoginEnvironment& env, const std::string& context = "");

}  // namespace tsum::providers::hetzner
