#include "providers/ssh/remote_files.h"

#include <filesystem>
#include <fstream>

namespace tsum::providers::ssh {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

bool valid_env_name(const std::string& k) {
  if (k.empty() || std::isdigit(static_cast<unsigned char>(k[0]))) return false;
  for (char c : k)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

Result<std::string> env_file(const std::map<std::string, std::string>& env) {
  std::string text;
  for (const auto& [k, v] : env) {
    if (!valid_env_name(k)) return make_error(Code::invalid_argument, "bad environment name '" + k + "'");
    text += k + "=" + shell_quote(v) + "\n";
  }
  return text;
}

Task<Result<CommandResult>> run_remote(const SshOptions& o, const SshHost& h, const std::string& script,
                                       const std::string& log_path, milliseconds limit) {
  const auto argv = ssh_argv(o, h, {}, "sh -c " + shell_quote(script));
  co_return co_await run_bounded(argv, child_env(), log_path, limit);
}

Task<Result<CommandResult>> run_remote_captured(const SshOptions& o, const SshHost& h, const std::string& script,
                                                const std::string& scratch_path, milliseconds limit) {
  std::error_code ec;
  fs::remove(scratch_path, ec);
  auto r = co_await run_remote(o, h, script, scratch_path, limit);
  if (r) {
    std::ifstream in(scratch_path, std::ios::binary);
    std::string all(4 << 20, '\0');
    in.read(all.data(), static_cast<std::streamsize>(all.size()));
    all.resize(static_cast<size_t>(in.gcount()));
    while (!all.empty() && (all.back() == '\n' || all.back() == '\r')) all.pop_back();
    r->output = std::move(all);
  }
  fs::remove(scratch_path, ec);
  co_return r;
}

Task<Status> push_files(const SshOptions& o, const SshHost& h, const std::string& stage, const std::string& remote_dir,
                        const std::vector<RemoteFile>& files, const std::string& log_path, const std::string& where) {
  std::error_code ec;
  fs::remove_all(stage, ec);
  fs::create_directories(stage, ec);
  if (!ec) fs::permissions(stage, fs::perms::owner_all, ec);  // secret files hold the run token
  if (ec) co_return make_error(Code::unavailable, "stage " + stage + ": " + ec.message());
  std::vector<std::string> sources;
  for (const auto& f : files) {
    const std::string path = stage + "/" + f.name;
    std::ofstream(path) << f.content;
    if (f.secret) fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write, ec);
    sources.push_back(path);
  }
  const milliseconds command_limit = o.command_timeout, push_limit = o.push_timeout;
  auto made = co_await run_remote(o, h, "umask 077 && mkdir -p " + shell_quote(remote_dir), log_path, command_limit);
  Status st;
  if (!made) st = made.error();
  else if (made->exit_code != 0) st = make_error(Code::unavailable, "mkdir on " + where + ": " + made->output);
  if (st) {
    const auto cp = scp_argv(o, h, sources, "REMOTE:" + remote_dir + "/");
    auto copied = co_await run_bounded(cp, child_env(), log_path, push_limit);
    if (!copied) st = make_error(copied.error().code, "copy to " + where + ": " + copied.error().detail);
    else if (copied->exit_code != 0) st = make_error(Code::unavailable, "copy to " + where + ": " + copied->output);
  }
  fs::remove_all(stage, ec);  // secret files hold the run token
  co_return st;
}

}  // namespace tsum::providers::ssh
