// A real OpenSSH server on a machine of its own, as far as the network goes: a network namespace joined to
// this one by a veth pair, with sshd listening on the namespace's end. Made for the ssh provider's tests; needs
// root, iproute2 and openssh-server. A missing precondition fails the test (it is never skipped).
// Names are unique per test process; the destructor kills every process left in the namespace and deletes it.
#pragma once

#include <doctest/doctest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "integration/daemon_process.h"

namespace tsum::testing {

// Runs a shell command, returning its exit status (-1 if it could not run).
inline int shell(const std::string& cmd) {
  int rc = std::system(cmd.c_str());
  return rc == -1 ? -1 : WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
}

inline void require_ssh_test_preconditions() {
  if (geteuid() != 0) FAIL("the ssh provider test needs root (it creates network namespaces); run it as root");
  for (const char* tool : {"/usr/sbin/sshd", "/usr/bin/ssh", "/usr/bin/scp", "/usr/bin/ssh-keygen", "/usr/bin/curl"})
    if (access(tool, X_OK) != 0)
      FAIL(tool << " is missing: install openssh-server, openssh-client and curl (scripts/install-deps.sh)");
  if (shell("ip netns list >/dev/null 2>&1") != 0) FAIL("`ip netns` does not work: install iproute2");
}

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

class NetnsSshd {
 public:
  // index: 1..60, distinct per host within a test. authorized_keys: the public key file that may log in as root.
  NetnsSshd(const std::string& dir, int index, const std::string& authorized_keys) : dir_(dir) {
    std::string id = std::to_string(getpid()) + "n" + std::to_string(index);
    ns_ = "tsumssh" + id;
    veth_ = "ts" + id + "a";
    int net = 200 + static_cast<int>(getpid() % 50);  // 10.<net>.<subnet>.0/30 per host
    int subnet = index * 4 % 256;
    std::string prefix = "10." + std::to_string(net) + "." + std::to_string(subnet) + ".";
    address_ = prefix + "2";
    std::string peer = "ts" + id + "b";
    created_ = true;
    try {
      start(prefix, peer, authorized_keys);
    } catch (...) {
      cleanup();
      throw;
    }
  }
  ~NetnsSshd() { cleanup(); }
  NetnsSshd(const NetnsSshd&) = delete;
  NetnsSshd& operator=(const NetnsSshd&) = delete;

  const std::string& address() const { return address_; }
  // Cuts the host off: its link goes down, so packets to it are dropped.
  void cut() { REQUIRE(shell("ip link set " + veth_ + " down") == 0); }
  // Processes still running in the namespace.
  int processes() const { return std::atoi(run_capture("ip netns pids " + ns_ + " | wc -l").c_str()); }

  // Deletes the namespaces (and their processes and links) of earlier test processes that are gone, e.g.
  // killed by a CTest timeout before their destructors ran.
  static void sweep_stale() {
    std::string names = run_capture("ip netns list 2>/dev/null | awk '{print $1}' | grep '^tsumssh' || true");
    size_t start = 0;
    while (start < names.size()) {
      size_t nl = names.find('\n', start);
      std::string ns = names.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
      start = nl == std::string::npos ? names.size() : nl + 1;
      std::string pid = ns.substr(7, ns.find('n', 7) - 7);
      if (pid.empty() || access(("/proc/" + pid).c_str(), F_OK) == 0) continue;
      shell("ip netns pids " + ns + " | xargs -r kill -KILL; ip link del ts" + ns.substr(7) + "a 2>/dev/null; ip netns del " + ns);
    }
  }

 private:
  void start(const std::string& prefix, const std::string& peer, const std::string& authorized_keys) {
    for (const std::string& cmd :
         {"ip netns add " + ns_, "ip link add " + veth_ + " type veth peer name " + peer,
          "ip link set " + peer + " netns " + ns_, "ip addr add " + prefix + "1/30 dev " + veth_,
          "ip link set " + veth_ + " up", "ip -n " + ns_ + " addr add " + address_ + "/30 dev " + peer,
          "ip -n " + ns_ + " link set " + peer + " up", "ip -n " + ns_ + " link set lo up", std::string("mkdir -p /run/sshd"),
          "ssh-keygen -q -t ed25519 -N '' -f " + dir_ + "/host_key_" + ns_})
      if (shell(cmd) != 0) FAIL("setting up a test host failed at: " << cmd);
    std::string config = dir_ + "/sshd_config_" + ns_;
    std::ofstream(config) << "ListenAddress " << address_ << "\nPort 22\nHostKey " << dir_ << "/host_key_" << ns_
                          << "\nAuthorizedKeysFile " << authorized_keys
                          << "\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n"
                             "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nAllowTcpForwarding yes\n"
                             "Subsystem sftp /usr/lib/openssh/sftp-server\nPidFile none\nLogLevel ERROR\n";
    sshd_ = fork();
    REQUIRE(sshd_ >= 0);
    if (sshd_ == 0) {
      std::string log = dir_ + "/sshd_" + ns_ + ".log";
      FILE* f = freopen(log.c_str(), "a", stderr);
      (void)f;
      execl("/usr/sbin/ip", "ip", "netns", "exec", ns_.c_str(), "/usr/sbin/sshd", "-D", "-e", "-f", config.c_str(),
            nullptr);
      _exit(127);
    }
    if (!eventually([&] { return tcp_connects(address_, 22); }, std::chrono::seconds(20)))
      FAIL("sshd in " << ns_ << " does not listen on " << address_ << ":22");
  }

  void cleanup() {
    if (!created_) return;
    created_ = false;
    // Everything that runs in the namespace: sshd, its sessions, the agent and tsum-train.
    shell("ip netns pids " + ns_ + " 2>/dev/null | xargs -r kill -KILL 2>/dev/null");
    if (sshd_ > 0) {
      kill(sshd_, SIGKILL);
      waitpid(sshd_, nullptr, 0);
    }
    shell("ip link del " + veth_ + " 2>/dev/null");
    shell("ip netns del " + ns_ + " 2>/dev/null");
  }

  std::string dir_, ns_, veth_, address_;
  pid_t sshd_ = 0;
  bool created_ = false;
};

}  // namespace tsum::testing
