// The byo ("bring your own") provider: any machine that joins with one command. A run's "instance" is a
// one-time join code. create() makes the code and returns at once; the run waits in `booting` until someone runs
//   curl -fsSL https://DAEMON/v1/join/CODE | sh
// as root on a stock Debian/Ubuntu machine: that fetches (once; a second fetch is refused) a shell script that
// holds the agent and its environment and runs the whole run there, in the foreground, under
// /var/lib/tsum/<instance id>. Nothing is powered off: the agent's clean-up (removing that directory) is the
// run's poweroff, which ends when the machine reports it with POST /v1/join/CODE/left.
//   describe:  pending until the script is fetched, running after, gone once the machine left (or the code
//              expired unused, or a terminate found nobody had joined).
//   terminate: an unused code is revoked (gone at once); a joined machine is asked nothing (the daemon cannot
//              reach it): it is gone when it reports its clean-up, or `leave_grace` after the terminate call.
// State lives in <state_dir>/byo/<id>.json, so codes and joins survive a daemon restart.
#pragma once

#include <chrono>
#include <filesystem>
#include <utility>
#include <mutex>
#include <string>

#include "providers/provider.h"

namespace tsum::providers {

struct ByoOptions {
  std::string state_dir;                          // required
  double hourly_price = 0;                        // what a joined machine costs, for the planner and budgets
  std::string billing_rule = "per_second_60s_min";  // the rule its offer names
  std::chrono::seconds code_ttl{24 * 3600};       // a join code unused this long expires
  std::chrono::seconds leave_grace{60};           // after terminate, how long to wait for the clean-up report
};

class ByoProvider final : public Provider {
 public:
  explicit ByoProvider(ByoOptions opts);

  std::string_view name() const override { return "byo"; }
  Capabilities capabilities() const override { return {.gpus = true, .spot = false, .docker = true, .native = true}; }
  Task<Result<std::vector<Offer>>> offers(const Requirements& req) override;
  Task<Result<InstanceHandle>> create(const Offer& offer, const LaunchSpec& spec) override;
  Task<Result<InstanceStatus>> describe(const InstanceHandle& h) override;
  Task<Status> terminate(const InstanceHandle& h) override;
  Task<Result<std::vector<InstanceHandle>>> list_tagged(std::string_view tag) override;

  // The script GET /v1/join/{code} serves. not_found for an unknown or revoked code, already_exists (HTTP 409)
  // when it was fetched before, timeout when it expired.
  Result<std::string> join(const std::string& code);
  // POST /v1/join/{code}/left: the joined machine finished its clean-up. not_found for an unknown code.
  Status left(const std::string& code);

 private:
  std::string dir() const;
  // The state file and record holding `code`; not_found when none does (or the code is malformed).
  Result<std::pair<std::filesystem::path, nlohmann::json>> find_code(const std::string& code) const;

  ByoOptions opts_;
  std::mutex mu_;
};

// The shell script a machine runs to join: the agent script and its environment, written under
// /var/lib/tsum/<instance_id>, then the agent in the foreground. Checks that it runs as root with curl.
std::string byo_join_script(const std::string& instance_id, const std::string& code, const std::string& agent_script,
                            const std::map<std::string, std::string>& env);

}  // namespace tsum::providers
