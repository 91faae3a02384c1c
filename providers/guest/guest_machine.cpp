#include "providers/guest/guest_machine.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "providers/guest/host_command.h"
#include "providers/guest/root_files.h"

namespace tsum::providers::guest {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
constexpr auto kCopyDeadline = std::chrono::minutes(5);

// Runs as this host's /bin/sh in the machine's new namespaces (mount/PID/UTS/IPC new, all mounts private, the
// machine's network namespace joined by nsenter), as pid 1: builds the guest's view of the world from its root $1, pivots into it and
// execs the guest's command. Says "ok" on fd 3 just before, and closes it.
constexpr const char* kLauncher = R"(set -eu
r=$1 name=$2
shift 2
mkdir -p "$r/proc" "$r/sys" "$r/dev" "$r/run"
mount --bind "$r" "$r"
mount -t proc -o nosuid,nodev,noexec proc "$r/proc"
mount --bind "$r/proc/sys" "$r/proc/sys"
mount -o remount,bind,ro,nosuid,nodev,noexec "$r/proc/sys"
mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$r/sys"
mount -t tmpfs -o mode=0755,nosuid,noexec,size=1m tmpfs "$r/dev"
for d in null zero full random urandom tty; do
  : > "$r/dev/$d"
  mount --bind "/dev/$d" "$r/dev/$d"
done
mkdir "$r/dev/pts" "$r/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5 devpts "$r/dev/pts"
ln -s pts/ptmx "$r/dev/ptmx"
ln -s /proc/self/fd "$r/dev/fd"
ln -s /proc/self/fd/0 "$r/dev/stdin"
ln -s /proc/self/fd/1 "$r/dev/stdout"
ln -s /proc/self/fd/2 "$r/dev/stderr"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$r/dev/shm"
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs "$r/run"
mkdir -m 1777 "$r/run/lock"
printf '%s\n' "$name" > /proc/sys/kernel/hostname
cd "$r"
pivot_root . .
umount -l .
cd /
printf ok >&3
exec 3>&-
exec /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"
)";

bool plain_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

// Absolute, normalised, at least two components, of plain characters (it goes into mount options).
bool plain_dir(std::string_view p) {
  return p.starts_with('/') && p.find("//") == std::string_view::npos && !p.ends_with('/') &&
         std::count(p.begin(), p.end(), '/') >= 2 && p.find("/.") == std::string_view::npos &&
         std::all_of(p.begin(), p.end(), [](char c) { return plain_char(c) || c == '/'; });
}

bool valid_name(std::string_view n) {
  return !n.empty() && n.size() <= 63 && std::all_of(n.begin(), n.end(), plain_char);
}

std::string tail_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream all;
  all << in.rdbuf();
  std::string text = all.str();
  return text.size() > 600 ? text.substr(text.size() - 600) : text;
}

// The first child of pid (/proc/<pid>/task/<pid>/children), or -1.
pid_t first_child(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  pid_t child = -1;
  in >> child;
  return in ? child : -1;
}

// Reaps pid within the deadline; true when it is gone (or was never ours to reap).
bool reap(pid_t pid, Clock::time_point deadline) {
  for (;;) {
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

std::vector<pid_t> netns_pids(const std::string& netns) {
  std::vector<pid_t> out;
  auto r = run_command({"ip", "netns", "pids", netns}, kIpDeadline);
  if (!r || r->exit_code != 0) return out;
  std::istringstream in(r->output);
  for (pid_t p; in >> p;) out.push_back(p);
  return out;
}

// Removes what a machine had on this host; each step is idempotent, so it also finishes a half-made machine
// or one whose owner died.
void teardown(const GuestNetwork& network, const AddressLease& lease, const std::string& dir) {
  std::error_code ec;
  if (fs::exists("/run/netns/" + lease.netns, ec)) {
    for (const auto deadline = Clock::now() + GuestMachine::kHaltDeadline;;) {
      auto pids = netns_pids(lease.netns);
      if (pids.empty() || Clock::now() >= deadline) break;
      for (pid_t p : pids) ::kill(p, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  if (fs::exists("/sys/class/net/" + lease.veth, ec)) (void)run_command({"ip", "link", "del", lease.veth}, kIpDeadline);
  if (fs::exists("/run/netns/" + lease.netns, ec)) (void)run_command({"ip", "netns", "del", lease.netns}, kIpDeadline);
  if (plain_dir(dir)) {
    ::umount2((dir + "/root").c_str(), MNT_DETACH);  // EINVAL when it is no mount point: a copied disk
    fs::remove_all(dir, ec);
  }
  network.release(lease);
}

}  // namespace

GuestMachine::GuestMachine(GuestNetwork network, AddressLease lease, std::string dir, std::string name)
    : network_(std::move(network)), lease_(std::move(lease)), dir_(std::move(dir)), name_(std::move(name)) {}

GuestMachine::~GuestMachine() { halt(); }

Result<std::unique_ptr<GuestMachine>> GuestMachine::create(const GuestImage& image, const GuestNetwork& network,
                                                           GuestMachineOptions options) {
  if (!plain_dir(options.dir))
    return make_error(Code::invalid_argument, "machine directory '" + options.dir +
                                                  "' must be an absolute, normalised path of letters, digits, / _ . -");
  if (!plain_dir(image.root()))
    return make_error(Code::invalid_argument, "image root '" + image.root() + "' must be a plain absolute path");
  if (!valid_name(options.name))
    return make_error(Code::invalid_argument, "machine name '" + options.name + "' must be 1 to 63 letters, digits, . _ -");
  sweep_stale(network);
  std::error_code ec;
  fs::create_directories(fs::path(options.dir).parent_path(), ec);
  if (!fs::create_directory(options.dir, ec)) {
    if (ec) return make_error(Code::internal, "cannot create " + options.dir + ": " + ec.message());
    return make_error(Code::already_exists, "machine directory " + options.dir + " exists");
  }
  auto lease = network.lease(options.dir);
  if (!lease) {
    fs::remove_all(options.dir, ec);
    return lease.error();
  }
  std::unique_ptr<GuestMachine> m(new GuestMachine(network, std::move(*lease), options.dir, options.name));
  if (auto s = m->make_disk(image, options.disk); !s) return s.error();  // the destructor undoes the rest
  const std::string hosts = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" + m->address() +
                            "\t" + m->name_ + "\n";
  for (const auto& [path, text] : {std::pair<std::string, std::string>{"/etc/hostname", m->name_ + "\n"},
                                   {"/etc/hosts", hosts},
                                   {"/etc/resolv.conf", "# tsum guest machine: no name server; the daemon is reached "
                                                        "by address.\noptions timeout:1 attempts:1\n"}})
    if (auto s = m->write_file(path, text, 0644); !s) return s.error();
  if (auto s = m->join_network(); !s) return s.error();
  return m;
}

Status GuestMachine::make_disk(const GuestImage& image, DiskMode mode) {
  const std::string root = this->root(), upper = dir_ + "/upper", work = dir_ + "/work";
  std::error_code ec;
  fs::create_directory(root, ec);
  if (ec) return make_error(Code::internal, "cannot create " + root + ": " + ec.message());
  if (mode != DiskMode::copy) {
    fs::create_directory(upper, ec);
    fs::create_directory(work, ec);
    const std::string opts = "lowerdir=" + image.root() + ",upperdir=" + upper + ",workdir=" + work;
    if (::mount("overlay", root.c_str(), "overlay", 0, opts.c_str()) == 0) {
      disk_ = DiskMode::overlay;
      return {};
    }
    const int err = errno;
    if (mode == DiskMode::overlay)
      return make_error(Code::internal, "cannot mount an overlay on " + root + ": " + strerror(err));
    fs::remove_all(upper, ec);
    fs::remove_all(work, ec);
  }
  disk_ = DiskMode::copy;
  return run_checked({"tar", "-x", "-f", image.tarball(), "-C", root, "--numeric-owner", "--exclude=./dev/*"},
                     kCopyDeadline);
}

Status GuestMachine::join_network() {
  const std::string& ns = lease_.netns;
  const std::vector<std::vector<std::string>> steps = {
      {"ip", "netns", "add", ns},
      {"ip", "link", "add", lease_.veth, "type", "veth", "peer", "name", "eth0", "netns", ns},
      {"ip", "link", "set", lease_.veth, "master", network_.bridge(), "up"},
      {"ip", "-n", ns, "addr", "add", network_.cidr(lease_.address), "dev", "eth0"},
      {"ip", "-n", ns, "link", "set", "eth0", "up"},
      {"ip", "-n", ns, "link", "set", "lo", "up"},
      {"ip", "-n", ns, "route", "add", "default", "via", network_.gateway()}};
  for (const auto& step : steps)
    if (auto s = run_checked(step, kIpDeadline); !s) return s;
  return {};
}

Status GuestMachine::write_file(std::string_view guest_path, std::string_view content, unsigned mode) {
  if (halted_) return make_error(Code::internal, "machine " + name_ + " is halted");
  return write_in_root(root(), guest_path, content, mode);
}

Result<std::string> GuestMachine::read_file(std::string_view guest_path) const {
  if (halted_) return make_error(Code::internal, "machine " + name_ + " is halted");
  return read_in_root(root(), guest_path);
}

Status GuestMachine::start(const std::vector<std::string>& argv) {
  if (halted_) return make_error(Code::invalid_argument, "machine " + name_ + " is halted");
  if (argv.empty()) return make_error(Code::invalid_argument, "no command to start machine " + name_ + " with");
  if (started_) return make_error(Code::invalid_argument, "machine " + name_ + " was started already");
  started_ = true;
  // unshare stays in this host's network namespace: only the guest's own processes are in the machine's.
  std::vector<std::string> args{find_tool("setpriv"), "--pdeathsig", "KILL", find_tool("unshare"), "--mount", "--uts",
                                "--ipc", "--pid", "--fork", "--kill-child", "--propagation", "private",
                                find_tool("nsenter"), "--net=/run/netns/" + lease_.netns, "/bin/sh", "-c", kLauncher,
                                "tsum-guest-launcher", root(), name_};
  args.insert(args.end(), argv.begin(), argv.end());
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  char* envp[] = {const_cast<char*>(kToolPath), nullptr};
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) return make_error(Code::internal, std::string("pipe: ") + strerror(errno));
  const std::string console = console_path();
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, console.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_adddup2(&actions, ready[1], 3);
  posix_spawn_file_actions_addclosefrom_np(&actions, 4);
  posix_spawn_file_actions_addchdir_np(&actions, "/");
  sigset_t none, defaults;
  sigemptyset(&none);
  sigfillset(&defaults);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSID);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, args[0].c_str(), &actions, &attr, cargv.data(), envp);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(ready[1]);
  if (rc != 0) {
    ::close(ready[0]);
    return make_error(Code::internal, "cannot start setpriv/unshare/nsenter: " + std::string(strerror(rc)));
  }
  unshare_ = pid;
  // "ok" once the launcher is about to exec the command; EOF without it when the launcher failed.
  std::string said;
  bool timed_out = false;
  for (const auto deadline = Clock::now() + kStartDeadline; said != "ok";) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{ready[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char buf[8];
    ssize_t n = ::read(ready[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    said.append(buf, static_cast<std::size_t>(n));
  }
  ::close(ready[0]);
  if (said == "ok") {
    for (const auto deadline = Clock::now() + kStartDeadline; (init_ = first_child(unshare_)) <= 0;) {
      if (Clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    // A pidfd names init for good: a signal through it never reaches a later process that reused the pid.
    if (init_ > 0) init_fd_ = static_cast<int>(::syscall(SYS_pidfd_open, init_, 0));
    if (init_ > 0) return {};
  }
  ::kill(unshare_, SIGKILL);  // --kill-child takes the launcher down with it
  reap(unshare_, Clock::now() + kHaltDeadline);
  unshare_ = init_ = -1;
  if (timed_out)
    return make_error(Code::timeout, "machine " + name_ + " did not start within " +
                                         std::to_string(kStartDeadline.count()) + " s: " + tail_of(console));
  return make_error(Code::internal, "machine " + name_ + " did not start: " + tail_of(console));
}

bool GuestMachine::running() {
  if (unshare_ < 0) return false;
  int status = 0;
  if (::waitpid(unshare_, &status, WNOHANG) == 0) return true;
  unshare_ = init_ = -1;  // init exited (and with it the whole PID namespace); unshare is reaped now
  return false;
}

void GuestMachine::halt() {
  if (halted_) return;
  halted_ = true;
  if (unshare_ > 0) {
    // SIGKILL to init makes the kernel kill everything in its PID namespace; unshare, waiting for init,
    // exits once init is reaped, that is once the namespace is empty.
    if (init_fd_ >= 0) ::syscall(SYS_pidfd_send_signal, init_fd_, SIGKILL, nullptr, 0);
    if (!reap(unshare_, Clock::now() + kHaltDeadline)) {
      ::kill(unshare_, SIGKILL);
      reap(unshare_, Clock::now() + kHaltDeadline);
    }
    unshare_ = init_ = -1;
  }
  if (init_fd_ >= 0) ::close(init_fd_);
  init_fd_ = -1;
  teardown(network_, lease_, dir_);
}

int GuestMachine::sweep_stale(const GuestNetwork& network) {
  int n = 0;
  for (const auto& l : network.leases()) {
    if (l.owner_alive) continue;
    teardown(network, l.lease, l.note);
    ++n;
  }
  return n;
}

int GuestMachine::remove_all(const GuestNetwork& network) {
  int n = 0;
  for (const auto& l : network.leases()) {
    teardown(network, l.lease, l.note);
    ++n;
  }
  return n;
}

}  // namespace tsum::providers::guest
