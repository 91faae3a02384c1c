// A real OpenSSH server on a machine of its own: a guest machine (providers/guest) of the stock Debian root
// with openssh-server (CTest's guest_rootfs_ssh fixture: TSUM_GUEST_SSH_IMAGE) on a test network, sshd its
// init. It shares nothing with the daemon but the network: its disk is a copy of the stock root, its own
// host key, root's authorized_keys the given public key; the daemon reaches it at address():22 through the
// test network's bridge. Made for the ssh provider's tests; needs root, iproute2 and util-linux, and the ssh
// client tools on this host. A missing precondition fails the test (it is never skipped).
// The destructor halts the machine: everything that ran on it, its disk and its network namespace go.
#pragma once

#include <doctest/doctest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "integration/daemon_process.h"
#include "providers/guest/docker_engine.h"
#include "support/guest_net.h"
#include "support/guest_probe.h"

namespace tsum::testing {

// Runs a shell command, returning its exit status (-1 if it could not run).
inline int shell(const std::string& cmd) {
  int rc = std::system(cmd.c_str());
  return rc == -1 ? -1 : WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
}

inline void require_ssh_test_preconditions() {
  if (geteuid() != 0) FAIL("the ssh provider test needs root (it creates guest machines); run it as root");
  for (const char* tool : {"/usr/bin/ssh", "/usr/bin/scp", "/usr/bin/ssh-keygen", "/usr/bin/curl"})
    if (access(tool, X_OK) != 0) FAIL(tool << " is missing: install openssh-client and curl (scripts/install-deps.sh)");
  if (shell("ip netns list >/dev/null 2>&1") != 0) FAIL("`ip netns` does not work: install iproute2");
}

class NetnsSshd {
 public:
  // name: the machine's name (unique on the network). authorized_keys: the public key file that may log in
  // as root (its contents are copied into the guest). docker_registry non-empty: the machine also runs
  // Docker's engine (the image's docker.io: cgroup v1 hierarchies mounted as a VM has them, dockerd on the vfs
  // driver without a bridge), trusting that plain-HTTP registry (HOST:PORT).
  NetnsSshd(const TestNetwork& net, const std::string& name, const std::string& authorized_keys,
            const std::string& docker_registry = "")
      : machine_(net.machine(name, kGuestSshImage)) {
    auto& m = *machine_;
    REQUIRE(m.write_file("/root/.ssh/authorized_keys", read_all(authorized_keys), 0600).ok());
    REQUIRE(m.write_file("/etc/ssh/sshd_config",
                         "Port 22\nHostKey /etc/ssh/ssh_host_ed25519_key\nPermitRootLogin prohibit-password\n"
                         "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                         "AllowTcpForwarding yes\nAllowStreamLocalForwarding yes\n"
                         "Subsystem sftp /usr/lib/openssh/sftp-server\nPidFile none\nLogLevel ERROR\n")
                .ok());
    // A host key of its own (the image's, made when openssh-server was installed, would be every host's).
    const std::string engine = docker_registry.empty() ? "" : guest::docker_engine_boot(docker_registry);
    auto started = m.start({"/bin/sh", "-c",
                            engine + "rm -f /etc/ssh/ssh_host_* && ssh-keygen -q -t ed25519 -N '' -f /etc/ssh/ssh_host_ed25519_key"
                            " && mkdir -p -m 0755 /run/sshd && exec /usr/sbin/sshd -D -e"});
    REQUIRE_MESSAGE(started.ok(), started.error().detail);
    netns_ = in_netns(m.netns());
    if (!eventually([&] { return tcp_connects(m.address(), 22); }, std::chrono::seconds(120)))
      FAIL("sshd on guest " << name << " does not listen on " << m.address() << ":22; console:\n"
                            << read_all(m.console_path()));
  }
  NetnsSshd(const NetnsSshd&) = delete;
  NetnsSshd& operator=(const NetnsSshd&) = delete;

  const std::string& address() const { return machine_->address(); }
  // The guest's "/" on this host, to look at what runs left there.
  std::string root() const { return machine_->root(); }
  providers::guest::GuestMachine& machine() { return *machine_; }
  // Cuts the host off: the bridge's end of its link goes down, so packets to it are dropped.
  void cut() { REQUIRE(shell("ip link set " + machine_->veth() + " down") == 0); }
  // Processes running on the host (sshd, its sessions, the agent, tsum-train).
  int processes() const { return static_cast<int>(netns_().size()); }

 private:
  std::unique_ptr<providers::guest::GuestMachine> machine_;
  ProcessList netns_;
};

}  // namespace tsum::testing
