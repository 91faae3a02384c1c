// A real Slurm cluster for tests (Debian 12's slurm-wlm 22.05 and munge): guest machines (providers/guest) of
// the stock Debian root with slurmctld, slurmd, slurm-client, munge and openssh-server (CTest's
// guest_rootfs_slurm fixture: TSUM_GUEST_SLURM_IMAGE) on a test network, each in a network namespace and on a
// root of its own:
//   ctl      the controller and login node: munged, slurmctld, sshd (root's authorized_keys the given key);
//   c1..cN   compute nodes: munged, slurmd.
// One generated slurm.conf (below) and one fresh munge key are written into every guest before it boots; all
// guests know each other by name (/etc/hosts). No cgroup plugin is used (proctrack/linuxproc, task/none), so
// the host's cgroup v1 hierarchy is never touched. Partitions: "batch" (every node, up, the default) and
// "held" (every node, State=DOWN: jobs submitted there wait in the queue with reason PartitionDown).
// SlurmdTimeout is short (options), so a compute node that dies is marked DOWN within seconds.
// The constructor returns once sinfo on ctl shows every node idle (a bounded wait) and records how long that
// took; the destructor halts every machine (TestNetwork sweeps what a killed test left). Needs root.
#pragma once

#include <doctest/doctest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "providers/guest/guest_machine.h"
#include "providers/guest/host_command.h"
#include "support/guest_net.h"
#include "support/guest_probe.h"

namespace tsum::testing {

#ifdef TSUM_GUEST_SLURM_IMAGE
inline const char* kGuestSlurmImage = TSUM_GUEST_SLURM_IMAGE;
#else
inline const char* kGuestSlurmImage = "build/cache/guest-bookworm-slurm.tar";
#endif

struct SlurmClusterOptions {
  int computes = 2;
  int slurmd_timeout_s = 6;   // a dead node is DOWN (not responding) after about this long
  std::string authorized_key; // public key file root may log in to ctl with
  bool rest = false;          // also slurmrestd on ctl:6820 (JWT auth: AuthAltTypes=auth/jwt), run as nobody
};

class SlurmCluster {
 public:
  SlurmCluster(const TestNetwork& net, SlurmClusterOptions o) : net_(net), o_(std::move(o)) {
    const auto t0 = std::chrono::steady_clock::now();
    ctl_ = net.machine("ctl", kGuestSlurmImage);
    for (int i = 1; i <= o_.computes; ++i) computes_.push_back(net.machine("c" + std::to_string(i), kGuestSlurmImage));
    std::string hosts = "127.0.0.1 localhost\n" + ctl_->address() + " ctl\n";
    for (const auto& c : computes_) hosts += c->address() + " " + c->name() + "\n";
    std::string key(1024, '\0');
    std::random_device rd;
    for (auto& ch : key) ch = static_cast<char>(rd());
    const std::string conf = slurm_conf();
    for (auto* m : machines()) {
      REQUIRE(m->write_file("/etc/hosts", hosts).ok());
      REQUIRE(m->write_file("/etc/slurm/slurm.conf", conf).ok());
      REQUIRE(m->write_file("/etc/slurm/cgroup.conf", "CgroupPlugin=cgroup/v1\nCgroupAutomount=no\n").ok());
      REQUIRE(m->write_file("/etc/munge/munge.key", key, 0400).ok());
    }
    const std::string munge =
        "mkdir -p /run/munge /var/log/munge /var/lib/munge /var/log/slurm /var/spool/slurmd /var/spool/slurmctld && "
        "chown -R munge:munge /etc/munge /run/munge /var/log/munge /var/lib/munge && chmod 0700 /etc/munge && "
        "runuser -u munge -- /usr/sbin/munged && ";
    REQUIRE(ctl_->write_file("/root/.ssh/authorized_keys", read_all(o_.authorized_key), 0600).ok());
    REQUIRE(ctl_->write_file("/etc/ssh/sshd_config",
                             "Port 22\nHostKey /etc/ssh/ssh_host_ed25519_key\nPermitRootLogin prohibit-password\n"
                             "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                             "Subsystem sftp /usr/lib/openssh/sftp-server\nPidFile none\nLogLevel ERROR\n")
                .ok());
    if (o_.rest) {
      std::string jwt(32, '\0');
      for (auto& ch : jwt) ch = static_cast<char>(rd());
      REQUIRE(ctl_->write_file("/var/spool/slurmctld/jwt_hs256.key", jwt, 0600).ok());
    }
    const std::string rest = o_.rest ? "(SLURM_JWT=daemon runuser -u nobody -- /usr/sbin/slurmrestd -a rest_auth/jwt -s v0.0.38 "
                                       "0.0.0.0:6820 > /var/log/slurm/slurmrestd.log 2>&1 &) && "
                                     : "";
    auto started = ctl_->start({"/bin/sh", "-c",
                                munge + "/usr/sbin/slurmctld && " + rest + "rm -f /etc/ssh/ssh_host_* && "
                                "ssh-keygen -q -t ed25519 -N '' -f /etc/ssh/ssh_host_ed25519_key && "
                                "mkdir -p -m 0755 /run/sshd && exec /usr/sbin/sshd -D -e"});
    REQUIRE_MESSAGE(started.ok(), started.error().detail);
    for (auto& c : computes_) {
      // slurmd 22.05 initialises its cgroup plugin whatever the config; an empty tmpfs at /sys/fs/cgroup lets it
      // (cgroup/v1, named in cgroup.conf: autodetect would look for systemd's hierarchy) without mounting any of the host's hierarchies. No plugin here uses cgroups.
      auto s = c->start({"/bin/sh", "-c", munge + "mkdir -p /sys/fs/cgroup && mount -t tmpfs -o mode=0755 cgroup "
                                                  "/sys/fs/cgroup && exec /usr/sbin/slurmd -D -N " + c->name()});
      REQUIRE_MESSAGE(s.ok(), s.error().detail);
    }
    std::string last;
    bool idle = wait_until([&] {
      last = ctl("sinfo -h -N -p batch -o '%N %t'");
      int n = 0;
      for (size_t at = last.find(" idle"); at != std::string::npos; at = last.find(" idle", at + 1)) ++n;
      return n == o_.computes;
    }, std::chrono::seconds(60));
    if (!idle) FAIL("the Slurm cluster did not come up within 60 s; sinfo: " << last << "\n" << logs());
    REQUIRE(wait_until([&] { return tcp_connects(ctl_->address(), 22); }, std::chrono::seconds(20)));
    if (o_.rest && !wait_until([&] { return tcp_connects(ctl_->address(), 6820); }, std::chrono::seconds(20)))
      FAIL("slurmrestd does not listen on ctl:6820: " << ctl("cat /var/log/slurm/slurmrestd.log"));
    start_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  const std::string& login_address() const { return ctl_->address(); }
  guest::GuestMachine& login() { return *ctl_; }
  guest::GuestMachine& compute(int i) { return *computes_.at(static_cast<size_t>(i)); }
  // Seconds from the first guest's creation until every compute node was idle and sshd answered.
  double start_seconds() const { return start_s_; }

  // Runs `sh -c command` on ctl (in all its namespaces, nsenter) and returns its output (stdout and stderr).
  std::string ctl(const std::string& command) const { return in_guest(*ctl_, command); }
  // A JWT for `user` from `scontrol token` on ctl (for slurmrestd's X-SLURM-USER-TOKEN); "" on failure.
  std::string token(const std::string& user = "root") const {
    std::string out = ctl("scontrol token username=" + user + " lifespan=3600");
    auto at = out.find("SLURM_JWT=");
    if (at == std::string::npos) return "";
    out = out.substr(at + 10);
    return out.substr(0, out.find_first_of("\r\n"));
  }
  // Kills a compute node: its slurmd, every job step on it and the machine itself.
  void kill_compute(int i) { computes_.at(static_cast<size_t>(i))->halt(); }

  // slurmctld's and every slurmd's log, for messages.
  std::string logs() const {
    std::string out = "--- slurmctld.log:\n" + tail(ctl_->read_file("/var/log/slurm/slurmctld.log")) + "--- ctl console:\n" +
                      tail(read_all(ctl_->console_path()));
    for (const auto& c : computes_)
      out += "--- " + c->name() + " slurmd.log:\n" + tail(c->read_file("/var/log/slurm/slurmd.log")) + "--- console:\n" +
             tail(read_all(c->console_path()));
    return out;
  }

  static std::string in_guest(const guest::GuestMachine& m, const std::string& command) {
    if (m.init_pid() <= 0) return "(halted)";
    auto r = guest::run_command({guest::find_tool("nsenter"), "-t", std::to_string(m.init_pid()), "-m", "-u", "-i",
                                 "-n", "-p", "-r", "-w", "--", "/bin/sh", "-c", command},
                                std::chrono::seconds(30));
    return r ? r->output : "(nsenter failed: " + r.error().detail + ")";
  }

 private:
  std::vector<guest::GuestMachine*> machines() {
    std::vector<guest::GuestMachine*> out = {ctl_.get()};
    for (auto& c : computes_) out.push_back(c.get());
    return out;
  }

  static std::string tail(const Result<std::string>& text) { return text ? tail(*text) : "(none)\n"; }
  static std::string tail(const std::string& text) {
    return text.size() > 3000 ? text.substr(text.size() - 3000) : text;
  }

  // Polls f every 200 ms until it holds or `limit` has passed.
  template <class F>
  static bool wait_until(F f, std::chrono::milliseconds limit) {
    for (auto deadline = std::chrono::steady_clock::now() + limit;;) {
      if (f()) return true;
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  std::string slurm_conf() const {
    std::string nodes;
    std::string conf =
        "ClusterName=tsumtest\nSlurmctldHost=ctl(" + ctl_->address() + ")\n"
        "SlurmUser=root\nSlurmdUser=root\nAuthType=auth/munge\nCredType=cred/munge\n"
        "StateSaveLocation=/var/spool/slurmctld\nSlurmdSpoolDir=/var/spool/slurmd\n"
        "SlurmctldPidFile=/run/slurmctld.pid\nSlurmdPidFile=/run/slurmd.pid\n"
        "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nSelectType=select/cons_tres\n"
        "SelectTypeParameters=CR_Core\nMpiDefault=none\nSwitchType=switch/none\n"
        "JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n"
        "JobCompType=jobcomp/none\nSchedulerType=sched/backfill\nReturnToService=2\n"
        "SlurmdParameters=config_overrides\nSlurmctldTimeout=30\nSlurmdTimeout=" +
        std::to_string(o_.slurmd_timeout_s) + "\nInactiveLimit=0\nMinJobAge=300\nKillWait=5\nWaittime=0\n"
        "MessageTimeout=5\nSlurmctldLogFile=/var/log/slurm/slurmctld.log\nSlurmdLogFile=/var/log/slurm/slurmd.log\n"
        "SlurmctldDebug=info\nSlurmdDebug=info\n";
    if (o_.rest) conf += "AuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key=/var/spool/slurmctld/jwt_hs256.key\n";
    for (const auto& c : computes_) {
      conf += "NodeName=" + c->name() + " NodeAddr=" + c->address() + " CPUs=2 RealMemory=2000 State=UNKNOWN\n";
      nodes += (nodes.empty() ? "" : ",") + c->name();
    }
    conf += "PartitionName=batch Nodes=" + nodes + " Default=YES MaxTime=INFINITE State=UP\n";
    conf += "PartitionName=held Nodes=" + nodes + " MaxTime=INFINITE State=DOWN\n";
    return conf;
  }

  const TestNetwork& net_;
  SlurmClusterOptions o_;
  std::unique_ptr<guest::GuestMachine> ctl_;
  std::vector<std::unique_ptr<guest::GuestMachine>> computes_;
  double start_s_ = 0;
};

}  // namespace tsum::testing
