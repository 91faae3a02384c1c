// `tsumd check`: one line per cloud saying whether it will work, with which login, and if not, why and the fix:
//   aws: usable, profile work (~/.aws/config, SSO), region eu-central-1 (profile work), account arn:aws:iam::...
//   aws: not usable: aws: profile work: the SSO login expired; run 'aws sso login --profile work'
// Each login is proved by one harmless call: STS GetCallerIdentity on AWS; on the other clouds, their price
// and machine-type listing (offers; a cluster's nodes). With --config FILE the file's cloud and Kubernetes
// sections are checked, and the exit code is 0 when every one is usable; without, each cloud of kLoginClouds
// and the user's kubeconfig are checked with the login alone (an empty section) and the exit code is 0 when one
// is usable. --json prints {"providers": [{"provider", "usable",
// "login", "detail"}]}.
// The daemon logs the same lines at start (log_logins).
#pragma once

#include <ostream>
#include <string>

#include "daemon/config/cloud_config.h"

namespace tsum::daemon {

int check_command(const std::string& config_path, bool json);

// The login each configured cloud found, a line each, as `check` words them before it proves them.
void log_logins(const CloudConfig& clouds, std::ostream& out);

}  // namespace tsum::daemon
