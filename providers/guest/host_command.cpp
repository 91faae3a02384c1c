#include "providers/guest/host_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace tsum::providers::guest {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kMaxOutput = 64 * 1024;

int exit_code_of(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

}  // namespace

std::string find_tool(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  for (const char* dir : {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}) {
    std::string path = std::string(dir) + "/" + name;
    if (::access(path.c_str(), X_OK) == 0) return path;
  }
  return name;
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

Result<CommandOutput> run_command(const std::vector<std::string>& argv, std::chrono::milliseconds limit) {
  if (argv.empty()) return make_error(Code::invalid_argument, "no command");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return make_error(Code::internal, std::string("pipe: ") + strerror(errno));
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  char* envp[] = {const_cast<char*>(kToolPath), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigfillset(&defaults);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const std::string path = find_tool(argv[0]);
  int rc = posix_spawn(&pid, path.c_str(), &actions, &attr, args.data(), envp);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    return make_error(Code::internal, "cannot start " + argv[0] + ": " + strerror(rc));
  }
  CommandOutput out;
  const auto deadline = Clock::now() + limit;
  bool timed_out = false;
  for (char buf[4096];;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;  // the deadline check above ends the loop
    ssize_t got = ::read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // EOF: every holder of the write end is gone
    out.output.append(buf, static_cast<std::size_t>(got));
    if (out.output.size() > kMaxOutput) out.output.erase(0, out.output.size() - kMaxOutput);
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  // The tool closed its output; it exits now (or was killed): reap it, bounded all the same.
  int status = 0;
  for (const auto reap_deadline = Clock::now() + std::chrono::seconds(5);;) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) return make_error(Code::internal, "waitpid " + argv[0] + ": " + strerror(errno));
    if (Clock::now() >= reap_deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);  // SIGKILL cannot be ignored: this returns
      timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (timed_out)
    return make_error(Code::timeout, command_line(argv) + " did not finish within " + std::to_string(limit.count()) + " ms");
  out.exit_code = exit_code_of(status);
  return out;
}

Status run_checked(const std::vector<std::string>& argv, std::chrono::milliseconds limit) {
  auto r = run_command(argv, limit);
  if (!r) return r.error();
  if (r->exit_code != 0) {
    std::string text = r->output;
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    return make_error(Code::internal, command_line(argv) + " failed (exit " + std::to_string(r->exit_code) + ")" +
                                          (text.empty() ? "" : ": " + text));
  }
  return {};
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace tsum::providers::guest
