// Probes for tests of the fake guest (tests/fakes/guest): the agent script they boot, waiting for a file
// an instance writes, and finding the processes an instance runs: those in its network namespace (a guest
// machine's processes all are, and nothing else is).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "providers/provider.h"

namespace tsum::testing {

// An agent that writes $TSUM_X into x.out in its working directory (/opt/tsum/work in the guest), starts
// `sleep 1000` in the background and sleeps itself.
inline providers::LaunchSpec guest_spec(const std::string& run, const std::string& x) {
  return {.run_id = run, .tag = "tsum-test", .idempotency_token = "guest" + run,
          .agent_script = "#!/bin/sh\necho \"$TSUM_X\" > x.out\nsleep 1000 &\nsleep 1000\n",
          .env = {{"TSUM_X", x}, {"TSUM_RUN_ID", run}}};
}

// Whether a TCP connection to address:port (IPv4) is accepted now.
inline bool tcp_connects(const std::string& address, int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, address.c_str(), &a.sin_addr);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(fd);
  return ok;
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

// The live (not zombie) process pid with its argv; nullopt when it is gone.
inline std::optional<ProbedProcess> probe_process(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid);
  const std::string stat = read_all(dir + "/stat");
  auto paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] == 'Z') return std::nullopt;
  ProbedProcess p{pid, {}};
  std::stringstream args(read_all(dir + "/cmdline"));
  for (std::string a; std::getline(args, a, '\0');) p.argv.push_back(a);
  return p;
}

// The identity of a named network namespace ("net:[<inode>]", as /proc/<pid>/ns/net reads), empty when there
// is none. It outlives the name: a namespace whose name was deleted while processes remain keeps it.
inline std::string netns_id(const std::string& name) {
  struct stat st {};
  if (name.empty() || ::stat(("/run/netns/" + name).c_str(), &st) != 0) return {};
  return "net:[" + std::to_string(st.st_ino) + "]";
}

// Live processes in any of the network namespaces `ids` (netns_id): a guest machine's processes.
inline std::vector<ProbedProcess> processes_in_net(const std::set<std::string>& ids) {
  std::vector<ProbedProcess> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code lec;
    const auto ns = std::filesystem::read_symlink(e.path() / "ns" / "net", lec);
    if (lec || !ids.contains(ns.string())) continue;
    if (auto p = probe_process(static_cast<pid_t>(std::stol(name)))) out.push_back(std::move(*p));
  }
  return out;
}

// Where count_within and gone_within look: e.g. a TestNetwork's guests (guest_net.h), or one netns.
using ProcessList = std::function<std::vector<ProbedProcess>()>;

// The processes of the named network namespace as it is now (found by identity: still found after the
// name is deleted).
inline ProcessList in_netns(const std::string& name) {
  std::set<std::string> ids;
  if (auto id = netns_id(name); !id.empty()) ids.insert(id);
  return [ids] { return processes_in_net(ids); };
}

inline int count_argv(const std::vector<ProbedProcess>& ps, const std::vector<std::string>& argv) {
  int n = 0;
  for (const auto& p : ps) n += p.argv == argv;
  return n;
}

// Whether exactly n processes of the list run argv within `limit` (a fork shows its parent's argv until
// it execs).
inline bool count_within(const ProcessList& list, const std::vector<std::string>& argv, int n,
                         std::chrono::milliseconds limit) {
  for (auto deadline = std::chrono::steady_clock::now() + limit;;) {
    if (count_argv(list(), argv) == n) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Whether every process of the list is gone within `limit`.
inline bool gone_within(const ProcessList& list, std::chrono::milliseconds limit) {
  for (auto deadline = std::chrono::steady_clock::now() + limit;;) {
    if (list().empty()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace tsum::testing
