#include "providers/local/process_group.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace tsum::providers::local {

std::optional<uint64_t> process_start_ticks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  // Field 2 (comm) may hold spaces and parentheses: parse after the last ')'.
  auto close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 2));
  std::string state;
  rest >> state;  // field 3
  if (state == "Z" || state == "X") return std::nullopt;
  std::string skip;
  for (int field = 4; field < 22; ++field) rest >> skip;
  uint64_t ticks = 0;
  rest >> ticks;  // field 22
  if (!rest) return std::nullopt;
  return ticks;
}

Result<Spawned> spawn_session(const SpawnSpec& spec) {
  if (spec.argv.empty()) return make_error(Code::invalid_argument, "spawn: empty argv");
  // Everything the child needs is built before fork: after it only async-signal-safe calls run.
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : spec.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> argv, envp;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  cpu_set_t mask;
  CPU_ZERO(&mask);
  for (int c : spec.cpus) CPU_SET(c, &mask);

  int err_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC) != 0) return make_error(Code::internal, std::string("pipe: ") + strerror(errno));
  pid_t pid = fork();
  if (pid < 0) {
    close(err_pipe[0]);
    close(err_pipe[1]);
    return make_error(Code::unavailable, std::string("fork: ") + strerror(errno));
  }
  if (pid == 0) {
    auto fail = [&](int step) {
      int e[2] = {step, errno};
      (void)!write(err_pipe[1], e, sizeof e);
      _exit(127);
    };
    if (setsid() < 0) fail(1);
    if (!spec.cpus.empty() && sched_setaffinity(0, sizeof mask, &mask) != 0) fail(2);
    int in = open("/dev/null", O_RDONLY);
    int out = open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (in < 0 || out < 0) fail(4);
    if (chdir(spec.cwd.c_str()) != 0) fail(3);
    if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0) fail(5);
    // Keep only 0, 1, 2 and the CLOEXEC error pipe (closed by exec).
    for (int fd = 3; fd < 65536; ++fd)
      if (fd != err_pipe[1]) close(fd);
    signal(SIGPIPE, SIG_DFL);
    execve(argv[0], argv.data(), envp.data());
    fail(6);
  }
  close(err_pipe[1]);
  int e[2] = {0, 0};
  ssize_t n = read(err_pipe[0], e, sizeof e);
  close(err_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof e)) {
    waitpid(pid, nullptr, 0);
    static const char* kSteps[] = {"", "setsid", "sched_setaffinity", "chdir", "open log", "dup2", "exec"};
    return make_error(Code::internal, std::string("spawn ") + spec.argv[0] + ": " + kSteps[e[0]] + ": " +
                                          strerror(e[1]));
  }
  Spawned s{pid, process_start_ticks(pid).value_or(0)};
  return s;
}

namespace {

// Fields 3 (state) and 5 (pgrp) of /proc/<pid>/stat.
bool stat_state_pgrp(const std::string& pid, char* state, pid_t* pgrp) {
  std::ifstream in("/proc/" + pid + "/stat");
  std::string line;
  if (!in || !std::getline(in, line)) return false;
  auto close = line.rfind(')');  // comm may hold spaces and parentheses
  if (close == std::string::npos) return false;
  std::istringstream rest(line.substr(close + 2));
  std::string st;
  long ppid = 0, pg = 0;
  rest >> st >> ppid >> pg;
  if (!rest || st.empty()) return false;
  *state = st[0];
  *pgrp = static_cast<pid_t>(pg);
  return true;
}

}  // namespace

bool group_has_live_member(pid_t pgid) {
  DIR* d = opendir("/proc");
  if (!d) return true;  // cannot tell: assume alive, the caller's deadline still holds
  bool live = false;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    char state = 0;
    pid_t pgrp = 0;
    if (stat_state_pgrp(e->d_name, &state, &pgrp) && pgrp == pgid && state != 'Z' && state != 'X') {
      live = true;
      break;
    }
  }
  closedir(d);
  return live;
}

bool group_alive(pid_t pgid, uint64_t start_ticks, std::optional<int>* exit_status) {
  if (pgid <= 1) return false;
  // Reap every member that is our child: the leader, and orphans re-parented to us as subreaper.
  for (;;) {
    int status = 0;
    pid_t r = waitpid(-pgid, &status, WNOHANG);
    if (r <= 0) break;
    if (r == pgid && exit_status && !*exit_status)
      *exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  if (auto ticks = process_start_ticks(pgid); ticks && start_ticks && *ticks != start_ticks)
    return false;  // the pid now belongs to someone else
  if (kill(-pgid, 0) != 0 && errno != EPERM) return false;
  return group_has_live_member(pgid);
}

void signal_group(pid_t pgid, uint64_t start_ticks, int sig) {
  if (group_alive(pgid, start_ticks)) kill(-pgid, sig);
}

}  // namespace tsum::providers::local
