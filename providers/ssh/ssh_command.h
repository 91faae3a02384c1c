// Command lines for the system ssh and scp clients (OpenSSH), and a child process run to completion under a
// deadline. Every ssh and scp runs non-interactively (BatchMode), trusts a host key on first use and pins it
// in the daemon's own known_hosts file (StrictHostKeyChecking=accept-new), gives up on an unreachable host
// after ConnectTimeout, and drops a session whose host stopped answering after
// ServerAliveInterval * ServerAliveCountMax. No user or system ssh_config is read (-F none).
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "providers/provider.h"
#include "providers/ssh/ssh_options.h"

namespace tsum::providers::ssh {

// POSIX sh single-quoting: the result is one word whatever s holds.
std::string shell_quote(std::string_view s);

// "user@address" (IPv6 addresses in brackets are not needed by ssh; scp gets them bracketed).
std::string destination(const SshHost& h);

// ssh [extra...] [common options] -p PORT user@address -- REMOTE_COMMAND. An option in extra overrides the
// common one (ssh keeps the first value it is given).
std::vector<std::string> ssh_argv(const SshOptions& o, const SshHost& h, const std::vector<std::string>& extra,
                                  const std::string& remote_command);
// scp -q -p -r [common options] -P PORT SOURCES... TARGET. Remote paths are written "REMOTE:path"
// and expanded to user@address:path here.
std::vector<std::string> scp_argv(const SshOptions& o, const SshHost& h, const std::vector<std::string>& sources,
                                  const std::string& target);

struct CommandResult {
  int exit_code = 0;    // 128 + signal when killed by one
  std::string output;   // the last 2 KiB of stdout and stderr together, trailing newlines trimmed
};

// Runs argv in a session of its own (stdin /dev/null, stdout and stderr appended to log_path) until it exits.
// timeout when it is still running after `limit`: its whole process group is killed first.
Task<Result<CommandResult>> run_bounded(const std::vector<std::string>& argv,
                                        const std::map<std::string, std::string>& env, const std::string& log_path,
                                        std::chrono::milliseconds limit);

// The exit status (128 + signal when killed) of our child pid once it has ended, reaping it; nullopt while it
// runs, or when it is not our child (e.g. started by an earlier daemon). group_alive can see a group end before
// it reaps the leader (it exits between the two checks), so callers ask here when it reported no status.
std::optional<int> reap(int pid);

// The last non-empty line of a log file ("" if none).
std::string last_line(const std::string& path);

// PATH, HOME, LANG and USER of the daemon, for the children it runs.
std::map<std::string, std::string> child_env();

}  // namespace tsum::providers::ssh
