#include "providers/ssh/ssh_provider.h"

#include <signal.h>

#include <boost/asio/use_awaitable.hpp>
#include <filesystem>
#include <fstream>

#include "providers/local/process_group.h"
#include "providers/ssh/remote_files.h"
#include "providers/ssh/ssh_command.h"
#include "providers/sleep_for.h"

namespace tsum::providers {

namespace fs = std::filesystem;
namespace asio = boost::asio;
using ssh::Reservation;
using std::chrono::milliseconds;

namespace {

// Run on the host as `sh <work>/start.sh` inside the tunnel's ssh session. Its exit status is the agent's,
// and so becomes the ssh client's.
constexpr const char* kStartScript = R"SH(#!/bin/sh
# Started by the tsum ssh provider over `ssh -R <work>/tsumd.sock:<daemon>`: loads the agent's environment,
# waits until the reverse tunnel reaches the daemon, starts the agent in a session of its own and waits for it.
cd "$(dirname "$0")" || exit 125
set -a; . ./agent.env; set +a
TSUM_UNIX_SOCKET="$(pwd)/tsumd.sock"; export TSUM_UNIX_SOCKET
i=0
until curl -s -o /dev/null --max-time 2 --unix-socket "$TSUM_UNIX_SOCKET" "$TSUM_URL/healthz"; do
  i=$((i + 1))
  [ "$i" -ge 50 ] && { echo "tsum-ssh: the reverse tunnel to the daemon does not answer" >&2; exit 124; }
  sleep 0.2
done
setsid sh ./agent.sh < /dev/null > agent.log 2>&1 &
echo $! > agent.pid
echo "tsum-ssh: agent started" >&2
wait $!
)SH";
constexpr std::string_view kStarted = "tsum-ssh: agent started";

InstanceHandle handle_of(const Reservation& r) {
  return {"ssh", r.id, {{"host", r.host}, {"work", r.work}}};
}

std::string where(const SshHost& h) { return "ssh host " + h.name + " (" + h.address + ":" + std::to_string(h.port) + ")"; }

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

// "http://127.0.0.1:8080" → "127.0.0.1:8080", the reverse tunnel's far end.
Result<std::string> forward_target(const std::map<std::string, std::string>& env) {
  auto it = env.find("TSUM_URL");
  std::string url = it == env.end() ? "" : it->second;
  if (!url.starts_with("http://")) return make_error(Code::invalid_argument, "ssh: TSUM_URL must be http://HOST:PORT");
  std::string hostport = url.substr(7);
  if (auto slash = hostport.find('/'); slash != std::string::npos) hostport.resize(slash);
  if (hostport.rfind(':') == std::string::npos) return make_error(Code::invalid_argument, "ssh: TSUM_URL has no port");
  return hostport;
}

}  // namespace

SshProvider::SshProvider(SshOptions opts)
    : opts_(std::move(opts)), reservations_(opts_.state_dir + "/ssh/hosts") {
  if (opts_.known_hosts.empty()) opts_.known_hosts = opts_.state_dir + "/ssh/known_hosts";
}

Capabilities SshProvider::capabilities() const {
  bool gpus = false, docker = false;
  for (const auto& h : opts_.hosts) {
    gpus = gpus || h.gpus > 0;
    docker = docker || h.docker;
  }
  return {.gpus = gpus, .spot = false, .docker = docker, .native = true, .reaches_daemon = true};
}

const SshHost* SshProvider::find_host(std::string_view name) const {
  for (const auto& h : opts_.hosts)
    if (h.name == name) return &h;
  return nullptr;
}

std::string SshProvider::log_path(const std::string& what) const { return opts_.state_dir + "/ssh/logs/" + what + ".log"; }

Task<Result<std::vector<Offer>>> SshProvider::offers(const Requirements& req) {
  std::vector<Offer> out;
  for (const auto& h : opts_.hosts) {
    if ((!req.instance_type.empty() && req.instance_type != h.name) || h.cores < req.min_vcpus || h.gpus < req.gpus)
      continue;
    Offer o;
    o.provider = "ssh";
    o.instance_type = h.name;
    o.vcpus = h.cores;
    o.memory_gib = h.memory_gib;
    o.gpus = h.gpus;
    o.gpu_type = h.gpu_type;
    o.hourly_price = h.hourly_price;
    o.region = h.address;
    o.billing_rule = h.billing;
    o.note = "own machine over ssh, one run at a time, billed by " + h.billing;
    out.push_back(std::move(o));
  }
  co_return out;
}

Task<Status> SshProvider::power(const SshHost& h, const std::string& command, const char* what) {
  if (command.empty()) co_return Status{};
  auto env = ssh::child_env();
  env["TSUM_SSH_HOST"] = h.name;
  env["TSUM_SSH_ADDRESS"] = h.address;
  const std::vector<std::string> argv = {"/bin/sh", "-c", command};
  const std::string log = log_path("host-" + h.name);
  const milliseconds limit = opts_.power_timeout;
  auto r = co_await ssh::run_bounded(argv, env, log, limit);
  if (!r && r.code() == Code::timeout)
    co_return make_error(Code::timeout, std::string(what) + " of " + where(h) + " did not finish within " +
                                            std::to_string(opts_.power_timeout.count()) + " s");
  if (!r) co_return make_error(r.code(), std::string(what) + " of " + where(h) + ": " + r.error().detail);
  if (r->exit_code != 0)  // the command itself is not repeated: it may hold credentials
    co_return make_error(Code::unavailable, std::string(what) + " of " + where(h) + " exited with status " +
                                                std::to_string(r->exit_code));
  co_return Status{};
}

Task<Status> SshProvider::wait_reachable(const SshHost& h) {
  const auto deadline = std::chrono::steady_clock::now() + opts_.boot_timeout;
  const auto argv = ssh::ssh_argv(opts_, h, {}, "true");
  const auto env = ssh::child_env();
  const std::string log = log_path("host-" + h.name);
  const milliseconds limit = opts_.connect_timeout + std::chrono::seconds(10);
  std::string last = "no attempt";
  for (;;) {
    auto r = co_await ssh::run_bounded(argv, env, log, limit);
    if (r && r->exit_code == 0) co_return Status{};
    last = r ? r->output : r.error().detail;
    for (const char* fatal : {"Permission denied", "Host key verification failed", "IDENTIFICATION HAS CHANGED"})
      if (last.find(fatal) != std::string::npos)
        co_return make_error(Code::unavailable, where(h) + " refused us: " + last);
    if (std::chrono::steady_clock::now() + std::chrono::seconds(1) >= deadline)
      co_return make_error(Code::unavailable, where(h) + " did not answer within " +
                                                  std::to_string(opts_.boot_timeout.count()) + " s: " + last);
    co_await sleep_for(milliseconds(1000));
  }
}

Task<Status> SshProvider::stop_remote(const SshHost& h, const std::string& work) {
  std::string script = "W=" + ssh::shell_quote(work) +
                       "; p=$(cat \"$W/agent.pid\" 2>/dev/null); if [ -n \"$p\" ]; then kill -TERM -\"$p\" 2>/dev/null;"
                       " sleep 1; kill -KILL -\"$p\" 2>/dev/null; fi; rm -rf \"$W\"; exit 0";
  const std::string log = log_path("host-" + h.name);
  const milliseconds limit = opts_.command_timeout;
  auto r = co_await ssh::run_remote(opts_, h, script, log, limit);
  if (!r) co_return r.error();
  if (r->exit_code != 0)
    co_return make_error(Code::unavailable, "could not stop the agent on " + where(h) + ": " + r->output);
  co_return Status{};
}

Task<Status> SshProvider::push(const SshHost& h, const Reservation& r, const LaunchSpec& spec) {
  auto env = spec.env;
  // The agent reaches the daemon through the tunnel's socket, which start.sh names; it downloads the trainer
  // and the data set and uploads its results through it, so only these three small files are copied.
  env["TSUM_URL"] = "http://localhost";
  auto env_text = ssh::env_file(env);
  if (!env_text) co_return make_error(Code::invalid_argument, "ssh: " + env_text.error().detail);
  const std::vector<ssh::RemoteFile> files = {
      {"agent.sh", spec.agent_script}, {"start.sh", kStartScript}, {"agent.env", *env_text, true}};
  co_return co_await ssh::push_files(opts_, h, opts_.state_dir + "/ssh/stage/" + r.id, r.work, files, log_path(r.id),
                                     where(h));
}

Task<Status> SshProvider::start_tunnel(const SshHost& h, Reservation& r, const std::string& daemon_target) {
  // A Unix socket in the instance's own directory (mode 0700): no port to clash with, and no other user of the
  // host can reach the daemon through it.
  local::SpawnSpec spec;
  // LogLevel INFO: when the host stops answering, ssh's last words ("Timeout, server ... not responding.")
  // end the log and become the run's reason.
  spec.argv = ssh::ssh_argv(opts_, h, {"-o", "LogLevel=INFO", "-o", "ExitOnForwardFailure=yes", "-R",
                                       r.work + "/tsumd.sock:" + daemon_target},
                            "sh " + ssh::shell_quote(r.work + "/start.sh"));
  spec.argv[0] = "/usr/bin/ssh";
  spec.env = ssh::child_env();
  spec.cwd = "/";
  spec.log_path = log_path(r.id);
  std::error_code ec;
  auto offset = fs::exists(spec.log_path, ec) ? fs::file_size(spec.log_path, ec) : 0;
  auto spawned = local::spawn_session(spec);
  if (!spawned) co_return spawned.error();
  r.tunnel_pid = spawned->pid;
  r.tunnel_ticks = spawned->start_ticks;
  if (auto s = reservations_.update(r); !s) co_return s.error();

  const auto limit = opts_.connect_timeout + std::chrono::seconds(30);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::optional<int> status;
  while (local::group_alive(r.tunnel_pid, r.tunnel_ticks, &status)) {
    if (read_file(spec.log_path).substr(offset).find(kStarted) != std::string::npos) co_return Status{};
    if (std::chrono::steady_clock::now() > deadline)
      co_return make_error(Code::timeout, "the agent on " + where(h) + " did not start within " +
                                              std::to_string(limit.count()) + " s");
    co_await sleep_for(milliseconds(100));
  }
  if (!status) status = ssh::reap(r.tunnel_pid);
  std::string out = read_file(spec.log_path).substr(offset);
  if (out.find(kStarted) != std::string::npos) co_return Status{};  // started and already over: describe tells
  while (!out.empty() && out.back() == '\n') out.pop_back();
  co_return make_error(Code::unavailable, "starting the agent on " + where(h) + " failed (ssh exit " +
                                              std::to_string(status.value_or(-1)) + "): " + out);
}

Task<Status> SshProvider::launch(const SshHost& h, Reservation& r, const LaunchSpec& spec) {
  auto target = forward_target(spec.env);
  if (!target) co_return target.error();
  if (auto s = co_await power(h, h.power_on, "power_on"); !s) co_return s;
  if (auto s = co_await wait_reachable(h); !s) co_return s;
  if (auto left = reservations_.pending_cleanup(h.name)) {
    const std::string work = *left;
    if (auto s = co_await stop_remote(h, work); !s)
      co_return make_error(Code::unavailable, "an earlier agent in " + work + " is still to be stopped: " + s.error().detail);
    reservations_.clear_pending_cleanup(h.name);
  }
  r.touched = true;  // from here on the host may hold files or processes of this instance
  if (auto s = reservations_.update(r); !s) co_return s;
  if (auto s = co_await push(h, r, spec); !s) co_return s;
  co_return co_await start_tunnel(h, r, *target);
}

Task<Result<InstanceHandle>> SshProvider::create(const Offer& offer, const LaunchSpec& spec) {
  const SshHost* h = find_host(offer.instance_type);
  if (!h) co_return make_error(Code::invalid_argument, "no ssh host named '" + offer.instance_type + "'");
  if (spec.idempotency_token.empty()) co_return make_error(Code::invalid_argument, "create needs an idempotency token");
  if (auto held = reservations_.find(h->name)) {
    if (held->idempotency_token == spec.idempotency_token) co_return handle_of(*held);
    co_return make_error(Code::unavailable, where(*h) + " is busy with instance " + held->id);
  }
  Reservation r;
  r.id = "ssh-" + h->name + "-" + spec.run_id + "-" + spec.idempotency_token.substr(0, 8);
  r.host = h->name;
  r.run_id = spec.run_id;
  r.tag = spec.tag;
  r.idempotency_token = spec.idempotency_token;
  r.work = h->work_dir + "/" + r.id;
  std::error_code ec;
  for (const char* sub : {"/ssh/logs", "/ssh/stage"}) fs::create_directories(opts_.state_dir + sub, ec);
  if (auto s = reservations_.claim(r); !s) {
    if (s.code() == Code::already_exists) co_return make_error(Code::unavailable, where(*h) + " is busy");
    co_return s.error();
  }
  auto launched = co_await launch(*h, r, spec);
  if (!launched) {
    const InstanceHandle mine = handle_of(r);
    auto undone = co_await terminate(mine);
    co_return make_error(launched.code(), launched.error().detail +
                                              (undone ? "" : "; cleaning up failed too: " + undone.error().detail));
  }
  co_return handle_of(r);
}

Task<Result<InstanceStatus>> SshProvider::describe(const InstanceHandle& h) {
  auto r = reservations_.find(h.data.value("host", ""));
  if (!r || r->id != h.id) co_return InstanceStatus{InstanceState::gone, "ssh host released", ""};
  const SshHost* host = find_host(r->host);
  std::string address = host ? host->address : "";
  if (r->ended) co_return InstanceStatus{InstanceState::exited, *r->ended, address};
  if (r->tunnel_pid == 0) co_return InstanceStatus{InstanceState::pending, "starting the agent", address};
  std::optional<int> status;
  if (local::group_alive(r->tunnel_pid, r->tunnel_ticks, &status))
    co_return InstanceStatus{InstanceState::running, "agent running", address};
  if (!status) status = ssh::reap(r->tunnel_pid);
  std::string on = host ? where(*host) : "ssh host " + r->host;
  if (!status) r->ended = "the ssh session to " + on + " ended while the daemon was not watching";
  else if (*status == 255) {
    std::string said = ssh::last_line(log_path(r->id));
    if (said.empty() || said.starts_with("tsum-ssh:")) said = "ssh exited with status 255";
    r->ended = "lost the ssh connection to " + on + ": " + said;
  }
  else r->ended = "agent on " + on + " exited with status " + std::to_string(*status);
  (void)reservations_.update(*r);
  co_return InstanceStatus{InstanceState::exited, *r->ended, address};
}

void SshProvider::end_tunnel(const Reservation& r) {
  if (r.tunnel_pid > 0) local::signal_group(r.tunnel_pid, r.tunnel_ticks, SIGKILL);
}

Task<Status> SshProvider::terminate(const InstanceHandle& h) {
  std::string name = h.data.value("host", "");
  auto r = reservations_.find(name);
  if (!r || r->id != h.id) co_return Status{};  // released already
  const SshHost* host = find_host(name);
  if (!host)
    co_return make_error(Code::not_found, "ssh host " + name + " is no longer configured; its agent in " + r->work +
                                              " may still run");
  end_tunnel(*r);
  for (int i = 0; i < 100 && r->tunnel_pid > 0 && local::group_alive(r->tunnel_pid, r->tunnel_ticks); ++i)
    co_await sleep_for(milliseconds(20));
  if (r->touched)
    if (auto stopped = co_await stop_remote(*host, r->work); !stopped)
      if (auto s = reservations_.set_pending_cleanup(name, r->work); !s) co_return s;
  if (auto off = co_await power(*host, host->power_off, "power_off"); !off) co_return off;
  co_return reservations_.release(name);
}

Task<Result<std::vector<InstanceHandle>>> SshProvider::list_tagged(std::string_view tag) {
  std::vector<InstanceHandle> out;
  for (const auto& r : reservations_.all())
    if (r.tag == tag) out.push_back(handle_of(r));
  co_return out;
}

}  // namespace tsum::providers
