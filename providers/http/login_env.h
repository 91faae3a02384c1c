// What every cloud login reads: the process's environment as a snapshot (so a test gives its own) and the
// user's files under the home directory, named in messages as ~/... . The clouds' own chains are in
// aws/aws_login.h, gce/gce_login.h, hetzner/hetzner_login.h, ...
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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
std::string lower(std::string s);
std::string trim(std::string_view s);

using IniSection = std::map<std::string, std::string>;
// Parses an INI text as Python's RawConfigParser does (botocore's files, gcloud's configurations): sections in
// brackets, `key = value` or `key: value` (keys lower-cased), # and ; comment lines, indented lines continuing a
// value (a value that starts on the next line is a nested section: "key = value" lines), [DEFAULT]'s keys in
// every section. invalid_argument names the line.
Result<std::vector<std::pair<std::string, IniSection>>> parse_ini(std::string_view text);

// A regular file's bytes; nullopt when it does not exist, is not a regular file or cannot be read.
std::optional<std::string> read_login_file(const std::string& path);

}  // namespace tsum::providers::http
