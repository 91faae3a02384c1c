#include "providers/slurm/slurm_cli.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>

#include "providers/ssh/remote_files.h"

namespace tsum::providers::slurm {

namespace fs = std::filesystem;
using ssh::shell_quote;
using std::chrono::milliseconds;

namespace {

bool says(const std::string& output, std::string_view what) { return output.find(what) != std::string::npos; }

// The last line of `out` that starts with a job id ("123" or "123;cluster"): sbatch --parsable's answer.
std::string parsable_id(const std::string& out) {
  std::string id;
  size_t from = 0;
  while (from <= out.size()) {
    size_t nl = out.find('\n', from);
    std::string line = out.substr(from, nl == std::string::npos ? std::string::npos : nl - from);
    size_t digits = 0;
    while (digits < line.size() && std::isdigit(static_cast<unsigned char>(line[digits]))) ++digits;
    if (digits > 0 && (digits == line.size() || line[digits] == ';' || line[digits] == '\r')) id = line.substr(0, digits);
    if (nl == std::string::npos) break;
    from = nl + 1;
  }
  return id;
}

}  // namespace

SlurmCli::SlurmCli(const SlurmOptions& opts) : opts_(opts), logs_(opts.state_dir + "/slurm/logs") {
  ssh_.state_dir = opts.state_dir + "/slurm";
  ssh_.known_hosts = opts.known_hosts.empty() ? opts.state_dir + "/slurm/known_hosts" : opts.known_hosts;
  ssh_.connect_timeout = opts.connect_timeout;
  ssh_.command_timeout = opts.command_timeout;
  ssh_.push_timeout = opts.push_timeout;
  ssh_.hosts = {opts.login};
}

std::string SlurmCli::where() const {
  return "slurm login node " + opts_.login.address + ":" + std::to_string(opts_.login.port);
}

Task<Result<ssh::CommandResult>> SlurmCli::run(const std::string& script) {
  static std::atomic<int> counter{0};
  std::error_code ec;
  fs::create_directories(logs_, ec);
  const std::string scratch = logs_ + "/cmd-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".out";
  const milliseconds limit = opts_.command_timeout;
  auto r = co_await ssh::run_remote_captured(ssh_, ssh_.hosts[0], script, scratch, limit);
  if (!r) co_return make_error(r.code(), where() + ": " + r.error().detail);
  if (r->exit_code == 255)
    co_return make_error(Code::unavailable, where() + " did not answer (ssh exit 255): " + r->output);
  co_return r;
}

Task<Result<std::vector<PartitionInfo>>> SlurmCli::partitions() {
  auto r = co_await run("sinfo -h -o " + shell_quote(kSinfoFormat));
  if (!r) co_return r.error();
  if (r->exit_code != 0)
    co_return make_error(Code::unavailable, "sinfo on " + where() + " exited with status " +
                                                std::to_string(r->exit_code) + ": " + r->output);
  co_return parse_sinfo(r->output);
}

Task<Result<std::string>> SlurmCli::submit(const SubmitRequest& req) {
  auto env_text = ssh::env_file(req.env);
  if (!env_text) co_return make_error(Code::invalid_argument, "slurm: " + env_text.error().detail);
  const std::vector<ssh::RemoteFile> files = {
      {"agent.sh", req.agent_script}, {"agent.env", *env_text, true}, {"job.sh", batch_script()}};
  const std::string stage = opts_.state_dir + "/slurm/stage/" + req.name;
  if (auto s = co_await ssh::push_files(ssh_, ssh_.hosts[0], stage, req.work, files, logs_ + "/push.log", where()); !s)
    co_return s.error();
  std::string sbatch = "sbatch --parsable --export=ALL --job-name=" + shell_quote(req.name) +
                       " --comment=" + shell_quote(req.comment) + " --partition=" + shell_quote(req.partition) +
                       " --nodes=" + std::to_string(req.nodes) +
                       " --ntasks-per-node=1 --exclusive --no-requeue --chdir=/tmp --output=/tmp/tsum-%j.out";
  for (const auto& a : opts_.sbatch_args) sbatch += " " + shell_quote(a);
  // The environment goes to the job through sbatch's own (--export=ALL), never on a command line; the work
  // directory (it holds the run token) is removed whether sbatch took the job or not.
  const std::string script = "cd " + shell_quote(req.work) + " || exit 1\nset -a\n. ./agent.env\nset +a\n"
                             "TSUM_AGENT_B64=$(base64 -w0 agent.sh)\nexport TSUM_AGENT_B64\n" +
                             sbatch + " job.sh\nrc=$?\ncd /\nrm -rf " + shell_quote(req.work) + "\nexit $rc\n";
  auto r = co_await run(script);
  if (!r) co_return r.error();
  std::string id = parsable_id(r->output);
  if (r->exit_code != 0 || id.empty())
    co_return make_error(Code::unavailable, "sbatch on " + where() + " exited with status " +
                                                std::to_string(r->exit_code) + ": " + r->output);
  co_return id;
}

Task<Result<std::optional<JobInfo>>> SlurmCli::job(const std::string& id) {
  auto r = co_await run("scontrol show job -o " + shell_quote(id) + " 2>&1");
  if (!r) co_return r.error();
  if (says(r->output, "Invalid job id")) co_return std::optional<JobInfo>();
  auto j = parse_scontrol_job(r->output);
  if (r->exit_code != 0 || !j)
    co_return make_error(Code::unavailable, "scontrol show job " + id + " on " + where() + " exited with status " +
                                                std::to_string(r->exit_code) + ": " + r->output);
  co_return j;
}

Task<Result<std::vector<JobInfo>>> SlurmCli::jobs() {
  auto r = co_await run("squeue -h -o " + shell_quote(kSqueueFormat));
  if (!r) co_return r.error();
  if (r->exit_code != 0)
    co_return make_error(Code::unavailable, "squeue on " + where() + " exited with status " +
                                                std::to_string(r->exit_code) + ": " + r->output);
  co_return parse_squeue(r->output);
}

Task<Status> SlurmCli::cancel(const std::string& id) {
  auto r = co_await run("scancel " + shell_quote(id) + " 2>&1");
  if (!r) co_return r.error();
  if (r->exit_code == 0 || says(r->output, "Invalid job id") || says(r->output, "already completing or completed"))
    co_return Status{};
  co_return make_error(Code::unavailable, "scancel " + id + " on " + where() + " exited with status " +
                                              std::to_string(r->exit_code) + ": " + r->output);
}

Task<Result<std::vector<std::string>>> SlurmCli::bad_nodes(const std::string& node_list) {
  std::vector<std::string> out;
  if (node_list.empty()) co_return out;
  auto r = co_await run("sinfo -h -N -n " + shell_quote(node_list) + " -o " + shell_quote("N|%N|%T|%E"));
  if (!r) co_return r.error();
  if (r->exit_code != 0)
    co_return make_error(Code::unavailable, "sinfo -N on " + where() + " exited with status " +
                                                std::to_string(r->exit_code) + ": " + r->output);
  std::string text = r->output;
  size_t from = 0;
  while (from < text.size()) {
    size_t nl = text.find('\n', from);
    std::string line = text.substr(from, nl == std::string::npos ? std::string::npos : nl - from);
    from = nl == std::string::npos ? text.size() : nl + 1;
    if (!line.starts_with("N|")) continue;
    auto a = line.find('|', 2), b = a == std::string::npos ? a : line.find('|', a + 1);
    if (b == std::string::npos) continue;
    std::string node = line.substr(2, a - 2), state = line.substr(a + 1, b - a - 1), reason = line.substr(b + 1);
    bool bad = state.find('*') != std::string::npos;
    for (const char* s : {"down", "drain", "fail", "unknown", "not_responding"}) bad = bad || state.find(s) != std::string::npos;
    if (!bad) continue;
    std::string d = node + " " + state;
    if (!reason.empty() && reason != "none") d += " (" + reason + ")";
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  }
  co_return out;
}

}  // namespace tsum::providers::slurm
