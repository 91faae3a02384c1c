// Probes for tests of the fake guest (providers/fake_guest): the agent script they boot, waiting for a file
// an instance writes, and finding the processes an instance left, by a marker in their command line or
// environment (every process of a guest inherits HOME=<guest root>/<id>).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "providers/provider.h"

namespace tsum::testing {

// An agent that writes $TSUM_X into x.out in its working directory, starts `sleep 1000` in the background
// and sleeps itself.
inline providers::LaunchSpec guest_spec(const std::string& run, const std::string& x) {
  return {.run_id = run, .tag = "tsum-test", .idempotency_token = "guest" + run,
          .agent_script = "#!/bin/sh\necho \"$TSUM_X\" > x.out\nsleep 1000 &\nsleep 1000\n",
          .env = {{"TSUM_X", x}, {"TSUM_RUN_ID", run}}};
}

inline std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The file's contents once it holds a whole line, waiting at most `limit`; empty if it never does.
inline std::string wait_for_line(const std::string& path, std::chrono::milliseconds limit) {
  for (auto deadline = std::chrono::steady_clock::now() + limit;;) {
    std::string text = read_all(path);
    if (text.ends_with('\n')) return text;
    if (std::chrono::steady_clock::now() >= deadline) return {};
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

struct ProbedProcess {
  pid_t pid;
  std::vector<std::string> argv;
};

// Live (not zombie) processes whose command line or environment contains marker.
inline std::vector<ProbedProcess> processes_with(const std::string& marker) {
  std::vector<ProbedProcess> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = read_all(entry.path() / "stat");
    auto paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] == 'Z') continue;
    const std::string cmdline = read_all(entry.path() / "cmdline");
    if (cmdline.find(marker) == std::string::npos && read_all(entry.path() / "environ").find(marker) == std::string::npos)
      continue;
    ProbedProcess p{static_cast<pid_t>(std::stol(name)), {}};
    std::stringstream args(cmdline);
    for (std::string a; std::getline(args, a, '\0');) p.argv.push_back(a);
    out.push_back(std::move(p));
  }
  return out;
}

inline int count_argv(const std::vector<ProbedProcess>& ps, const std::vector<std::string>& argv) {
  int n = 0;
  for (const auto& p : ps) n += p.argv == argv;
  return n;
}

// Whether exactly n processes with marker run argv within `limit` (a fork shows its parent's argv until
// it execs).
inline bool count_within(const std::string& marker, const std::vector<std::string>& argv, int n,
                         std::chrono::milliseconds limit) {
  for (auto deadline = std::chrono::steady_clock::now() + limit;;) {
    if (count_argv(processes_with(marker), argv) == n) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Whether every process with marker is gone within `limit`.
inline bool gone_within(const std::string& marker, std::chrono::milliseconds limit) {
  for (auto deadline = std::chrono::steady_clock::now() + limit;;) {
    if (processes_with(marker).empty()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace tsum::testing
