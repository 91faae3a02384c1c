#include "providers/ssh/ssh_command.h"

#include <signal.h>
#include <sys/wait.h>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <filesystem>
#include <fstream>
#include <optional>

#include "providers/local/process_group.h"

namespace tsum::providers::ssh {

namespace asio = boost::asio;
namespace fs = std::filesystem;

std::string shell_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

std::string destination(const SshHost& h) { return h.user.empty() ? h.address : h.user + "@" + h.address; }

namespace {

std::vector<std::string> common_options(const SshOptions& o, const SshHost& h) {
  auto opt = [](const std::string& kv) { return std::vector<std::string>{"-o", kv}; };
  std::vector<std::string> out = {"-F", "none", "-i", h.key_file};
  for (const auto& kv : {std::string("IdentitiesOnly=yes"), std::string("BatchMode=yes"),
                         std::string("StrictHostKeyChecking=accept-new"), "UserKnownHostsFile=" + o.known_hosts,
                         "ConnectTimeout=" + std::to_string(o.connect_timeout.count()),
                         "ServerAliveInterval=" + std::to_string(o.alive_interval.count()),
                         "ServerAliveCountMax=" + std::to_string(o.alive_count), std::string("LogLevel=ERROR")})
    for (auto& a : opt(kv)) out.push_back(std::move(a));
  return out;
}

std::string scp_host(const SshHost& h) {
  std::string a = h.address.find(':') != std::string::npos ? "[" + h.address + "]" : h.address;
  return h.user.empty() ? a : h.user + "@" + a;
}

std::string expand_remote(const SshHost& h, const std::string& path) {
  return path.starts_with("REMOTE:") ? scp_host(h) + ":" + path.substr(7) : path;
}

// The bytes a file grew by since offset, at most the last 2 KiB, without trailing newlines.
std::string tail_since(const std::string& path, std::uintmax_t offset) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(0, std::ios::end);
  std::streamoff end = in.tellg();
  if (!in || end < 0) return "";
  std::streamoff from = std::max<std::streamoff>(static_cast<std::streamoff>(offset), end - 2048);
  in.seekg(from);
  std::string out(static_cast<size_t>(end - from), '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

}  // namespace

std::vector<std::string> ssh_argv(const SshOptions& o, const SshHost& h, const std::vector<std::string>& extra,
                                  const std::string& remote_command) {
  std::vector<std::string> argv = {"ssh"};
  argv.insert(argv.end(), extra.begin(), extra.end());  // first: ssh keeps the first value of an option
  for (auto& a : common_options(o, h)) argv.push_back(std::move(a));
  for (const auto& a : {std::string("-n"), std::string("-T"), std::string("-p"), std::to_string(h.port),
                        destination(h), std::string("--"), remote_command})
    argv.push_back(a);
  return argv;
}

std::vector<std::string> scp_argv(const SshOptions& o, const SshHost& h, const std::vector<std::string>& sources,
                                  const std::string& target) {
  std::vector<std::string> argv = {"scp", "-q", "-p", "-r"};
  for (auto& a : common_options(o, h)) argv.push_back(std::move(a));
  argv.push_back("-P");
  argv.push_back(std::to_string(h.port));
  for (const auto& s : sources) argv.push_back(expand_remote(h, s));
  argv.push_back(expand_remote(h, target));
  return argv;
}

std::optional<int> reap(int pid) {
  int status = 0;
  if (pid <= 0 || waitpid(pid, &status, WNOHANG) != pid) return std::nullopt;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string last_line(const std::string& path) {
  std::string tail = tail_since(path, 0);
  auto nl = tail.rfind('\n');
  return nl == std::string::npos ? tail : tail.substr(nl + 1);
}

std::map<std::string, std::string> child_env() {
  std::map<std::string, std::string> env;
  for (const char* k : {"PATH", "HOME", "LANG", "USER"})
    if (const char* v = getenv(k)) env[k] = v;
  if (!env.count("PATH")) env["PATH"] = "/usr/local/bin:/usr/bin:/bin";
  return env;
}

Task<Result<CommandResult>> run_bounded(const std::vector<std::string>& argv,
                                        const std::map<std::string, std::string>& env, const std::string& log_path,
                                        std::chrono::milliseconds limit) {
  std::error_code ec;
  auto offset = fs::exists(log_path, ec) ? fs::file_size(log_path, ec) : 0;
  local::SpawnSpec spec;
  spec.argv = argv;
  // execve does not search PATH: resolve ssh, scp and sh here.
  if (spec.argv[0].find('/') == std::string::npos)
    for (const char* dir : {"/usr/bin/", "/bin/", "/usr/local/bin/"})
      if (fs::exists(std::string(dir) + argv[0], ec)) {
        spec.argv[0] = std::string(dir) + argv[0];
        break;
      }
  spec.env = env;
  spec.cwd = "/";
  spec.log_path = log_path;
  auto spawned = local::spawn_session(spec);
  if (!spawned) co_return spawned.error();

  const auto deadline = std::chrono::steady_clock::now() + limit;
  asio::steady_timer timer(co_await asio::this_coro::executor);
  std::optional<int> status;
  while (local::group_alive(spawned->pid, spawned->start_ticks, &status)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      local::signal_group(spawned->pid, spawned->start_ticks, SIGKILL);
      for (int i = 0; i < 100 && local::group_alive(spawned->pid, spawned->start_ticks); ++i) {
        timer.expires_after(std::chrono::milliseconds(20));
        co_await timer.async_wait(asio::use_awaitable);
      }
      co_return make_error(Code::timeout, argv[0] + " still running after " +
                                              std::to_string(limit.count() / 1000) + " s: " +
                                              tail_since(log_path, offset));
    }
    timer.expires_after(std::chrono::milliseconds(50));
    co_await timer.async_wait(asio::use_awaitable);
  }
  if (!status) status = reap(spawned->pid);
  co_return CommandResult{status.value_or(-1), tail_since(log_path, offset)};
}

}  // namespace tsum::providers::ssh
