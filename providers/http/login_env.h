// What every cloud login reads: the process's environment as a snapshot (so a test gives its own) and the
// user's files under the home directory, named in messages as ~/... . The clouds' own chains are in
// aws/aws_login.h, gce/gce_login.h, hetzner/hetzner_login.h, ...
#pragma once

#include <map>
#include <optional>
#include <string>

#include "common/result.h"

namespace tsum::providers::http {

struct LoginEnvironment {
  std::map<std::string, std::string> vars;
  std::string home;

  static LoginEnvironment current();  // this process's variables and HOME
  std::string get(const std::string& name) const;  // "" when unset
  bool has(const std::string& name) const { return vars.count(name) > 0; }
  // XDG_CONFIG_HOME, else ~/.config: where Go's os.UserConfigDir puts the hcloud CLI's file.
  std::string config_home() const;
};

// `path` with a leading ~ expanded to `home`, as the SDKs' expanduser does.
std::string expand_home(const std::string& path, const std::string& home);
// `path` with `home` shown as ~, for messages.
std::string tilde(const std::string& path, const std::string& home);
// A regular file's bytes; nullopt when it does not exist, is not a regular file or cannot be read.
std::optional<std::string> read_login_file(const std::string& path);

}  // namespace tsum::providers::http
