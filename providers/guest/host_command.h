// Running a tool of this host (ip, mount, tar, ...) for the guest sandbox: argv as given (no shell), found
// in PATH, stdin /dev/null, stdout and stderr captured together, no descriptor of ours inherited, and a
// deadline: past it the tool is SIGKILLed and reaped.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/result.h"

namespace tsum::providers::guest {

// The PATH entry of a tool's environment: sbin first, whatever the caller's PATH holds.
inline constexpr const char* kToolPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
// How long one ip(8) command may take.
inline constexpr std::chrono::seconds kIpDeadline{10};

struct CommandOutput {
  int exit_code = 0;   // 128 + signal when a signal ended it
  std::string output;  // stdout and stderr, interleaved; at most the last 64 KiB
};

// internal when the tool cannot be started; timeout (it was killed) past `limit`.
Result<CommandOutput> run_command(const std::vector<std::string>& argv, std::chrono::milliseconds limit);

// run_command, where a non-zero exit status is an internal error naming the command line and its output.
Status run_checked(const std::vector<std::string>& argv, std::chrono::milliseconds limit);

// The path of a tool: `name` itself when it holds a '/', else the first executable of that name in
// /usr/local/sbin, /usr/local/bin, /usr/sbin, /usr/bin, /sbin, /bin (the caller's PATH may lack sbin).
std::string find_tool(const std::string& name);

// The command line as one string, for messages.
std::string command_line(const std::vector<std::string>& argv);

// The whole of a file of this host (a /proc or /sys entry, a state file); empty when it cannot be read.
std::string read_text(const std::string& path);

}  // namespace tsum::providers::guest
