// The boot payload every cloud adapter hands its instance (EC2 UserData, GCE and Yandex metadata user-data,
// Azure customData, Hetzner user_data): a #cloud-config document that (for the docker runtime) installs Docker
// from the image's package repository, writes the agent (LaunchSpec::agent_sha256 set: a bootstrap that fetches
// it from the daemon by that hash, checks and runs it; else the script itself, gzipped), its environment file
// and a start script under one directory, and runs the start script once at first boot. The start script loads
// the environment and starts the agent in the background (its own session, output in agent.log), with the
// directory's work/ as its working directory. Optionally it first schedules a power-off after max_lifetime, a safety net for an
// instance whose daemon is gone (with EC2's InstanceInitiatedShutdownBehavior=terminate the power-off
// terminates it). tests/fakes/guest runs the same document in the fakes' guests.
#pragma once

#include <chrono>
#include <string>

#include "common/result.h"
#include "providers/provider.h"

namespace tsum::providers {

// EC2's limit before base64, the smallest of the five clouds' (Hetzner 32 KiB, Azure 64 KiB base64, GCE and
// Yandex 256 KiB of metadata), so one payload fits every cloud.
inline constexpr std::size_t kMaxUserDataBytes = 16384;

struct CloudInitOptions {
  std::string dir = "/opt/tsum";           // absolute; letters, digits, / _ . - only
  std::chrono::minutes max_lifetime{0};    // 0: no power-off timer
  // A spot launch (LaunchSpec::market) tells the agent to watch its cloud's advance notice: TSUM_SPOT_NOTICE is
  // spot_notice (set by the provider: aws, gce, azure; empty: its cloud gives none), TSUM_METADATA_URL is
  // metadata_url when set (the config's metadata_url: a stand-in for the cloud's own metadata service).
  std::string spot_notice = {};
  std::string metadata_url = {};
};

// The agent's bootstrap (POSIX sh): fetches the agent from the daemon (GET $TSUM_URL/v1/blobs/<sha256> with the
// run token, over TLS with TSUM_CA_PEM when given) into `dir`, checks its sha256 and runs it in its place, in the
// same session and directory. A daemon that does not answer, a refused request or other bytes are tried again
// with backoff (1, 2, 4 .. 30 s, for TSUM_BOOT_FETCH_S seconds, default 600); then it tells the daemon why as an
// install error (the daemon fails the run and terminates the machine) and exits. Also a Pod's command
// (providers/kubernetes).
std::string bootstrap_script(const std::string& dir, const std::string& sha256);

// invalid_argument: an env name that is not [A-Za-z_][A-Za-z0-9_]*, a bad dir, or a result over
// kMaxUserDataBytes.
Result<std::string> cloud_init_user_data(const LaunchSpec& spec, const CloudInitOptions& opts);

}  // namespace tsum::providers
