// The config file read from disk, its secrets and keys checked and materialized (daemon/config/config.h); parsing
// the text is config.cpp's, which reads nothing.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "daemon/config/config.h"
#include "daemon/config/config_fields.h"
#include "daemon/config/slurm_config.h"

namespace tsum::daemon {

namespace fs = std::filesystem;
using namespace config_detail;

Result<DaemonConfig> load_config(const std::string& path) {
  if (auto s = check_mode(path, S_IWGRP | S_IWOTH, "others may change the commands it runs; chmod go-w " + path); !s)
    return s.error();
  std::ifstream in(path);
  if (!in) return make_error(Code::invalid_argument, path + ": cannot be read");
  std::string text{std::istreambuf_iterator<char>(in), {}};
  std::error_code ec;
  auto config = parse_config(text, fs::absolute(path, ec).parent_path().string());
  if (!config) return make_error(Code::invalid_argument, path + ": " + config.error().detail);
  if (auto s = resolve_cloud_secrets(config->clouds); !s) return make_error(Code::invalid_argument, path + ": " + s.error().detail);
  if (config->slurm)
    if (auto s = read_slurm_token(config->slurm_token, &*config->slurm); !s)
      return make_error(Code::invalid_argument, path + ": " + s.error().detail);
  if (config->kubernetes)
    if (auto s = read_kubernetes_credentials(config->kubeconfig, &*config->kubernetes); !s)
      return make_error(Code::invalid_argument, path + ": " + s.error().detail);
  if (config->slurm && !config->slurm->login.key_file.empty())
    if (auto s = check_mode(config->slurm->login.key_file, S_IRWXG | S_IRWXO,
                            "the private key of the slurm login node is readable by others; chmod 600 " +
                                config->slurm->login.key_file);
        !s)
      return s.error();
  if (!config->ssh) return config;
  for (const auto& h : config->ssh->hosts) {
    if (!h.power_on.empty() || !h.power_off.empty())
      if (auto s = check_mode(path, S_IRWXG | S_IRWXO,
                              "it holds power_on/power_off commands (which may carry credentials) and others may read "
                              "it; chmod 600 " + path);
          !s)
        return s.error();
    if (!h.key_file.empty())
      if (auto s = check_mode(h.key_file, S_IRWXG | S_IRWXO,
                              "the private key of ssh host " + h.name + " is readable by others; chmod 600 " + h.key_file);
          !s)
        return s.error();
  }
  return config;
}

Status materialize_env_keys(DaemonConfig& config) {
  if (config.ssh_env_keys.empty()) return {};
  if (!config.ssh || config.ssh->state_dir.empty()) return make_error(Code::internal, "ssh keys need a state dir");
  std::string dir = config.ssh->state_dir + "/ssh/keys";
  std::error_code ec;
  fs::create_directories(dir, ec);
  fs::permissions(dir, fs::perms::owner_all, ec);
  for (const auto& k : config.ssh_env_keys) {
    const char* value = getenv(k.variable.c_str());
    if (!value || !*value)
      return make_error(Code::invalid_argument, "ssh host " + k.host + ": environment variable " + k.variable +
                                                    " (its key_env) is not set");
    std::string path = dir + "/" + k.host;
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return make_error(Code::unavailable, path + ": " + strerror(errno));
    std::string key = value;
    if (key.back() != '\n') key += '\n';  // OpenSSH refuses a key without its final newline
    bool ok = fchmod(fd, 0600) == 0 && write(fd, key.data(), key.size()) == static_cast<ssize_t>(key.size());
    close(fd);
    if (!ok) return make_error(Code::unavailable, "write " + path + " failed");
    for (auto& h : config.ssh->hosts)
      if (h.name == k.host) h.key_file = path;
  }
  return {};
}

}  // namespace tsum::daemon
