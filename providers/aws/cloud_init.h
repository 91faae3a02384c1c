// The instance's user data: a #cloud-config document that (for the docker runtime) installs Docker from the
// image's package repository, writes the agent script, its environment file
// and a start script under one directory, and runs the start script once at first boot. The start script
// loads the environment and starts the agent in the background (its own session, output in agent.log),
// with the directory's work/ as its working directory. Optionally it first schedules a power-off after
// max_lifetime, a safety net for an instance whose daemon is gone (with
// InstanceInitiatedShutdownBehavior=terminate the power-off terminates it).
#pragma once

#include <chrono>
#include <string>

#include "common/result.h"
#include "providers/provider.h"

namespace tsum::providers::aws {

inline constexpr std::size_t kMaxUserDataBytes = 16384;  // EC2's limit, before base64

struct CloudInitOptions {
  std::string dir = "/opt/tsum";           // absolute; letters, digits, / _ . - only
  std::chrono::minutes max_lifetime{0};    // 0: no power-off timer
};

// invalid_argument: an env name that is not [A-Za-z_][A-Za-z0-9_]*, a bad dir, or a result over
// kMaxUserDataBytes.
Result<std::string> cloud_init_user_data(const LaunchSpec& spec, const CloudInitOptions& opts);

}  // namespace tsum::providers::aws
