// The ssh provider: on-prem and bring-your-own machines reached with the system OpenSSH client.
//
// An "instance" is one configured host held for one run (one run per host at a time, whatever its cores):
//   create:    claim the host (a reservation file under <state_dir>/ssh/hosts), run its power_on command on
//              the daemon host, wait until sshd answers (boot_timeout), stop what an earlier unreachable run
//              left there, copy the agent, its environment (mode 0600: it holds the run token) and a start
//              script into <work_dir>/<instance id>/ with scp, then start the agent over a long-lived
//              `ssh -R <work>/tsumd.sock:<daemon>` session: through that reverse tunnel (a Unix socket in the
//              instance's 0700 directory) the agent downloads the trainer bundle and the data set, posts its
//              events and uploads its results, so the host needs no route to the daemon and no other user of
//              the host can reach the daemon through it. Nothing of the daemon's disk is copied to the host
//              (docs/artifacts.md). The agent runs in a session of its own
//              on the host (setsid) and its process group id is kept in agent.pid. create returns once the
//              agent is running; startup (create → first agent event) therefore includes the copies.
//   describe:  running while the tunnel session lives; exited when it ends: with the agent's exit status,
//              or, when ssh lost the connection (exit 255, e.g. ServerAlive gave up), with a detail naming
//              the host and the ssh error; gone once the host is released.
//   terminate: ends the tunnel, kills the agent's
//              process group on the host and removes its directory, runs power_off, releases the host.
//              An unreachable host is released with a pending cleanup: the next create on it repeats the
//              kill before anything else and fails while the host stays unreachable. Idempotent.
// Offers: one per host, instance type = host name, with its hourly price and billing rule.
#pragma once

#include <string>

#include "providers/provider.h"
#include "providers/ssh/host_reservation.h"
#include "providers/ssh/ssh_options.h"

namespace tsum::providers {

class SshProvider final : public Provider {
 public:
  explicit SshProvider(SshOptions opts);

  std::string_view name() const override { return "ssh"; }
  Capabilities capabilities() const override;
  Task<Result<std::vector<Offer>>> offers(const Requirements& req) override;
  Task<Result<InstanceHandle>> create(const Offer& offer, const LaunchSpec& spec) override;
  Task<Result<InstanceStatus>> describe(const InstanceHandle& h) override;
  Task<Status> terminate(const InstanceHandle& h) override;
  Task<Result<std::vector<InstanceHandle>>> list_tagged(std::string_view tag) override;

  const SshOptions& options() const { return opts_; }

 private:
  const SshHost* find_host(std::string_view name) const;
  std::string log_path(const std::string& what) const;
  Task<Status> power(const SshHost& h, const std::string& command, const char* what);
  Task<Status> wait_reachable(const SshHost& h);
  Task<Status> stop_remote(const SshHost& h, const std::string& work);
  Task<Status> push(const SshHost& h, const ssh::Reservation& r, const LaunchSpec& spec);
  Task<Status> start_tunnel(const SshHost& h, ssh::Reservation& r, const std::string& daemon_target);
  Task<Status> launch(const SshHost& h, ssh::Reservation& r, const LaunchSpec& spec);
  void end_tunnel(const ssh::Reservation& r);

  SshOptions opts_;
  ssh::ReservationStore reservations_;
};

}  // namespace tsum::providers
