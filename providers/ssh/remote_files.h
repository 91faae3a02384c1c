// Putting files on a host over ssh and running commands there: the pieces the ssh provider and the Slurm
// provider (whose login node is an ssh host) share. Every command is bounded by a deadline (run_bounded).
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "providers/provider.h"
#include "providers/ssh/ssh_command.h"
#include "providers/ssh/ssh_options.h"

namespace tsum::providers::ssh {

// A file to copy: its name in the remote directory and its contents. A secret one (it holds a run token)
// is mode 0600 on both ends; the others keep the stage's default mode.
struct RemoteFile {
  std::string name;
  std::string content;
  bool secret = false;
};

// A POSIX sh variable name: [A-Za-z_][A-Za-z0-9_]*.
bool valid_env_name(const std::string& k);

// "K='v'\n" per variable, for `set -a; . ./agent.env`. invalid_argument names a bad variable name.
Result<std::string> env_file(const std::map<std::string, std::string>& env);

// Runs `sh -c SCRIPT` on the host under `limit`; its output and exit status as run_bounded reports them.
Task<Result<CommandResult>> run_remote(const SshOptions& o, const SshHost& h, const std::string& script,
                                       const std::string& log_path, std::chrono::milliseconds limit);

// As run_remote, but the whole output (up to 4 MiB) comes back, not only its tail: scratch_path is a file of
// this host's (truncated first, removed after) that takes it.
Task<Result<CommandResult>> run_remote_captured(const SshOptions& o, const SshHost& h, const std::string& script,
                                                const std::string& scratch_path, std::chrono::milliseconds limit);

// Writes `files` into `stage` (a fresh directory of this host, mode 0700, removed again whatever happens),
// makes `remote_dir` on the host (umask 077, command_timeout) and copies them there with scp (push_timeout).
// Errors name `where` (e.g. "ssh host a (10.0.0.2:22)").
Task<Status> push_files(const SshOptions& o, const SshHost& h, const std::string& stage, const std::string& remote_dir,
                        const std::vector<RemoteFile>& files, const std::string& log_path, const std::string& where);

}  // namespace tsum::providers::ssh
