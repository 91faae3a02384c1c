// The parts of RunManager (daemon/runs/run_manager.h) share these, and nothing outside daemon/runs/ includes them:
// a live run's state (LiveRun) and what provisioning it needs (Launch). RunManager's methods are spread by job:
//   run_manager.cpp   the queue, a run's coroutine from start to end, cancel, agents' events, rendezvous, shutdown
//   run_launch.cpp    preparing and creating a run's machines, and the environment its agents start with
//   machine_watch.cpp watching the machines (polls, spot notices, deadlines) and terminating them, timed
//   run_restart.cpp   where a run's next attempt goes after an interruption, and adopting runs after a restart
#pragma once

#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <iostream>
#include <optional>
#include <span>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/embedded.h"
#include "daemon/runs/run_manager.h"

namespace tsum::daemon {

std::span<const EmbeddedFile> agent_files();  // compiled in from daemon/agent/

struct RunManager::LiveRun {
  LiveRun(boost::asio::io_context& io, QueueEntry e) : id(e.run_id), entry(std::move(e)), wake(io) {}
  int64_t id;
  QueueEntry entry;
  std::optional<std::string> cancel_reason;
  std::optional<std::string> agent_error;
  // Statuses from the provider's poller not yet looked at, by node.
  std::vector<std::pair<int, Result<providers::InstanceStatus>>> polled;
  std::optional<nlohmann::json> rendezvous;  // a multi-node run's meeting point, once node 0 has posted it
  bool saved = false;
  bool alive = false;  // the agent's first event has arrived (startup has ended): the startup deadline is over
  // A spot machine's interruption: the agent's notice (then its checkpoint, delivered after the notice), or the
  // cloud's API saying it took the machine back. `interrupted` holds why the attempt ended so: the run goes on
  // on a next machine (run_one).
  bool noticed = false;
  std::optional<std::chrono::steady_clock::time_point> noticed_at;
  bool checkpointed_after_notice = false;  // by every node
  std::set<int> checkpointed_nodes;        // the nodes whose checkpoint at the notice is in
  std::optional<std::string> interrupted;
  boost::asio::steady_timer wake;
  void poke() { wake.cancel(); }
};

// What provisioning a run needs, gathered before its first create; then the machines it made.
struct RunManager::Launch {
  RunRow row;
  providers::Provider* provider = nullptr;
  std::chrono::seconds run_deadline{0};  // the experiment's deadline, else the daemon's
  providers::Offer offer;
  providers::LaunchSpec spec;
  std::chrono::steady_clock::time_point t0;  // the first create call: the startup deadline counts from here
  providers::InstanceHandle instance;        // the machine, or the group of a run's nodes
  bool spot_config = false;                  // its config is a spot one: capacity failures move it (recovery.h)
  std::optional<Error> no_capacity;          // the create failed for capacity, before any machine was recorded
  std::vector<std::pair<std::string, std::string>> resume;  // the checkpoint (URL, sha256) each node goes on from
};

inline void log_line(const std::string& s) { std::cerr << "tsumd: " << s << std::endl; }

// How long an offer whose capacity ran out is passed over by the recoveries of every run.
inline constexpr std::chrono::minutes kCapacityHold{10};

}  // namespace tsum::daemon
