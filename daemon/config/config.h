// The room daemon/config/ owns the config file and the providers made from it: the parsers of each section (ssh,
// clouds, Slurm, Kubernetes), the provider registry, and `tsumd check` and `tsumd offers`. It calls providers/,
// billing/prices/ and runs/ (startup deadlines); the rest of the daemon asks it for a provider by name.
//
// The daemon's config file (`tsumd serve --config FILE`): JSON with one section per provider under
// "providers": "ssh" (providers/ssh), "slurm" (daemon/config/slurm_config.h), "kubernetes"
// (daemon/config/kube_config.h) and the clouds "aws", "gce", "azure", "hetzner", "yandex"
// (daemon/config/cloud_config.h). The format is documented in docs/config.md.
//
// Every field is checked: an unknown field, a wrong type or a value out of range is an invalid_argument that
// names the field by its path, e.g. `providers.ssh.hosts[1].prot: unknown field`. Secrets never sit in the
// file: keys are read from the files (key_file, *_file) or environment variables (key_env, *_env) it names. load_config also
// refuses a config file that others may write (it names commands the daemon runs), one that others may read
// while it names power_on / power_off commands (these usually carry credentials), and a key file that group or
// others may read.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "daemon/config/cloud_config.h"
#include "daemon/config/kube_config.h"
#include "daemon/config/slurm_config.h"
#include "daemon/runs/startup_deadline.h"
#include "providers/slurm/slurm_options.h"
#include "providers/ssh/ssh_options.h"

namespace tsum::daemon {

struct SshKeyFromEnv {
  std::string host;      // SshHost::name
  std::string variable;  // the environment variable holding the private key
};

struct DaemonConfig {
  std::optional<providers::SshOptions> ssh;  // state_dir left empty: the daemon fills it
  std::vector<SshKeyFromEnv> ssh_env_keys;   // hosts whose key comes from the environment
  CloudConfig clouds;                        // secrets read by load_config, not by parse_config
  std::string public_url;                    // daemon.public_url: as tsumd serve --public-url (which wins)
  double byo_hourly_price = 0;               // providers.byo.hourly_price: what a joined machine costs
  std::string byo_billing = "per_second_60s_min";  // providers.byo.billing
  std::chrono::seconds ssh_startup_deadline = default_startup_deadline("ssh");  // providers.ssh.startup_deadline_s
  std::optional<providers::SlurmOptions> slurm;  // providers.slurm (daemon/config/slurm_config.h); state_dir: the daemon's
  SlurmTokenRef slurm_token;                     // providers.slurm.slurmrestd's token, read by load_config
  std::chrono::seconds slurm_startup_deadline = default_startup_deadline("slurm");  // providers.slurm.startup_deadline_s
  std::optional<providers::KubernetesOptions> kubernetes;  // providers.kubernetes (daemon/config/kube_config.h)
  KubeconfigRef kubeconfig;                                // its kubeconfig, read by load_config
  std::chrono::seconds kubernetes_startup_deadline = default_startup_deadline("kubernetes");

  // The startup deadline of every provider the file configures (ssh and the clouds), by provider name.
  std::map<std::string, std::chrono::seconds> startup_deadlines() const;
};

// Parses the text of a config file. `dir` resolves relative key_file paths. No file-system checks.
Result<DaemonConfig> parse_config(std::string_view text, const std::string& dir);

// Reads, parses and checks the file (permissions of the file and of every key file), and reads the clouds'
// secrets.
Result<DaemonConfig> load_config(const std::string& path);

// For every host whose key comes from the environment: writes the variable's value to
// <ssh.state_dir>/ssh/keys/<host> (mode 0600) and points the host's key_file at it. Needs ssh->state_dir.
Status materialize_env_keys(DaemonConfig& config);

}  // namespace tsum::daemon
