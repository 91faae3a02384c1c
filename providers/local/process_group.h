// Starting and stopping the local agent's process group. Linux-specific (setsid, sched_setaffinity, /proc).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace tsum::providers::local {

struct SpawnSpec {
  std::vector<std::string> argv;            // argv[0] is the program path
  std::map<std::string, std::string> env;   // the whole environment of the child
  std::string cwd;
  std::string log_path;                     // stdout and stderr go here (appended)
  std::vector<int> cpus;                    // affinity; empty: inherit
};

struct Spawned {
  pid_t pid = 0;            // also the process group id: the child is a session leader
  uint64_t start_ticks = 0; // /proc/<pid>/stat starttime, guards against pid reuse
};

// fork + setsid + sched_setaffinity + exec. The child holds no descriptor of the daemon's but 0, 1, 2.
Result<Spawned> spawn_session(const SpawnSpec& spec);

// starttime of a live (non-zombie) process, nullopt if none.
std::optional<uint64_t> process_start_ticks(pid_t pid);

// Whether any process of group pgid is running. Zombies do not count: they have exited and only wait for
// a parent (perhaps an init that reaps slowly) to collect them, though kill(-pgid, 0) still finds them.
bool group_has_live_member(pid_t pgid);

// True while any process of group pgid is alive (zombies do not count) and the group is still the one we
// started: its leader is either gone or has the recorded start time. Reaps every exited member that is our
// child, writing the leader's wait status to *exit_status once.
bool group_alive(pid_t pgid, uint64_t start_ticks, std::optional<int>* exit_status = nullptr);

// Sends sig to the whole group if it is still ours (see group_alive).
void signal_group(pid_t pgid, uint64_t start_ticks, int sig);

}  // namespace tsum::providers::local
