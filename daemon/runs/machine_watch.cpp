// RunManager (daemon/runs/run_manager_parts.h): watching a run's machines (the provider's polls, spot notices, the
// startup and run deadlines) and terminating them, with the poweroff phase timed.
#include "daemon/runs/run_manager_parts.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>
#include <utility>

#include "billing/planner.h"
#include "common/embedded.h"
#include "daemon/runs/recovery.h"
#include "daemon/runs/startup_deadline.h"
#include "providers/node_group.h"

namespace tsum::daemon {

namespace asio = boost::asio;
using providers::InstanceHandle;
using providers::InstanceState;
using std::chrono::milliseconds;

asio::awaitable<RunManager::Outcome> RunManager::watch(LiveRun& live, const Launch& l) {
  const auto startup_limit = startup_deadline(l.row.provider);
  const std::string field = startup_deadline_field(l.row.provider);
  // The provider's poller reports the instance's status once per interval, for this run and its others.
  // Keys: the run id for a run of one machine; -((run id << 8) | node) - 1 for each machine of a group.
  struct Unwatch {
    std::shared_ptr<StatusPoller> poller;
    std::vector<int64_t> keys;
    ~Unwatch() {
      for (auto k : keys) poller->unwatch(k);
    }
  } watching{poller_for(*l.provider), {}};
  const auto machines = providers::node_handles(l.instance);
  for (size_t n = 0; n < machines.size(); ++n) {
    const int64_t key =
        providers::is_node_group(l.instance) ? -((live.id << 8) | static_cast<int64_t>(n)) - 1 : live.id;
    watching.keys.push_back(key);
    watching.poller->watch(key, machines[n], [&live, n](const tsum::Result<providers::InstanceStatus>& st) {
      live.polled.emplace_back(static_cast<int>(n), st);
      live.poke();
    });
  }
  std::string waiting;  // what the provider last said a machine waits for (a queue's or scheduler's reason)
  for (;;) {
    if (live.cancel_reason) co_return Outcome{RunStatus::cancelled, *live.cancel_reason};
    if (auto ended = after_notice(live, l)) co_return *ended;
    if (live.agent_error) co_return Outcome{RunStatus::failed, *live.agent_error};
    if (live.saved) co_return Outcome{RunStatus::done, ""};
    auto now = std::chrono::steady_clock::now();
    if (!live.alive) {  // read until seen: it never goes back
      auto phases = s_.ledger.phases(live.id);
      live.alive = phases && phases->count(Phase::startup) && (*phases)[Phase::startup].end;
    }
    if (!live.alive && now - l.t0 > startup_limit)
      co_return Outcome{RunStatus::failed, "no sign of life from the agent within " +
                                               std::to_string(startup_limit.count()) + " s (" + l.row.provider +
                                               "'s startup deadline" + (field.empty() ? "" : ", " + field) + ")" +
                                               (waiting.empty() ? "" : "; still waiting: " + waiting)};
    if (now - l.t0 > l.run_deadline)
      co_return Outcome{RunStatus::failed, deadline_reason(l.run_deadline.count())};
    // Every poll (a quarter second), so no billing step of a second or more passes unchecked.
    if (auto over = s_.budget.over_cap(live.id); over && *over) co_return Outcome{RunStatus::cancelled, **over};
    if (auto ended = judge_polled(live, l, machines.size(), waiting)) co_return *ended;
    live.wake.expires_after(opts_.poll);
    boost::system::error_code ec;
    co_await live.wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
}

std::optional<RunManager::Outcome> RunManager::interrupted(LiveRun& live, std::string why) {
  live.interrupted = std::move(why);
  return Outcome{RunStatus::queued, *live.interrupted};
}

std::optional<RunManager::Outcome> RunManager::after_notice(LiveRun& live, const Launch& l) {
  if (!live.noticed || live.saved) return std::nullopt;
  // The notice came: once the checkpoint is in (or there was nothing to save yet: no learning begun) the machine
  // is let go at once, not at the cloud's deadline. A run past learning finishes verify and save if they fit
  // before the machine goes (its going is an interruption, judge_polled). The daemon waits notice_wait for the
  // checkpoint before it moves on anyway.
  const auto notice_wait = std::chrono::seconds(150);
  bool begun = false, learned = false;
  if (live.entry.nodes > 1) {  // the run's own marks wait for every node: each node's says (any began, all ended)
    if (auto nodes = s_.ledger.node_phases(live.id)) {
      learned = static_cast<int>(nodes->size()) == live.entry.nodes;
      for (auto& [_, ph] : *nodes) {
        const bool b = ph.count(Phase::learn) && ph[Phase::learn].begin;
        begun = begun || b;
        learned = learned && b && ph[Phase::learn].end;
      }
    }
  } else {
    auto phases = s_.ledger.phases(live.id);
    begun = phases && phases->count(Phase::learn) && (*phases)[Phase::learn].begin;
    learned = begun && (*phases)[Phase::learn].end;
  }
  if (live.checkpointed_after_notice || !begun)
    return interrupted(live, "interrupted by " + l.row.provider + " (notice)" +
                                 (live.checkpointed_after_notice ? "; checkpoint held" : "; nothing to save yet"));
  if (!learned && live.noticed_at && std::chrono::steady_clock::now() - *live.noticed_at > notice_wait)
    return interrupted(live, "interrupted by " + l.row.provider + " (notice); no checkpoint within " +
                                 std::to_string(notice_wait.count()) + " s");
  return std::nullopt;
}

std::optional<RunManager::Outcome> RunManager::judge_polled(LiveRun& live, const Launch& l, size_t machines,
                                                            std::string& waiting) {
  auto polled = std::move(live.polled);
  live.polled.clear();
  for (const auto& [node, st] : polled) {
    if (st && st->queue_wait_s) (void)s_.ledger.set_queue_wait(live.id, *st->queue_wait_s);
    if (st && st->state == InstanceState::pending && !st->detail.empty()) waiting = st->detail;
    const std::string who = machines > 1 ? "node " + std::to_string(node) + ": " : "";
    if (machines > 1 && st && st->state == InstanceState::exited) {
      // A node that has saved its part is done and may have exited while the others still save.
      auto nodes_phases = s_.ledger.node_phases(live.id);
      if (nodes_phases && nodes_phases->count(node) && (*nodes_phases)[node].count(Phase::save) &&
          (*nodes_phases)[node][Phase::save].end)
        continue;
    }
    // The cloud took the machine back (its API says so), or a machine that had its notice went.
    if (st && (st->interrupted || (live.noticed && st->state != InstanceState::running &&
                                   st->state != InstanceState::pending))) {
      if (!live.noticed) {
        nlohmann::json notice = {{"source", "cloud"}, {"cloud", l.row.provider}, {"text", st->detail},
                                 {"at", s_.clock.now_s()}};
        (void)s_.ledger.note_interruption(live.id, notice);
      }
      return interrupted(live, "interrupted by " + l.row.provider + ": " + st->detail +
                                   (live.noticed ? "" : " (no notice reached the machine)"));
    }
    if (st && st->state == InstanceState::gone)
      return Outcome{RunStatus::failed, who + "instance disappeared: " + st->detail};
    if (st && st->state == InstanceState::exited && st->past_deadline)
      return Outcome{RunStatus::failed, deadline_reason(l.run_deadline.count())};
    if (st && st->state == InstanceState::exited)  // the agent delivers its events before it exits
      return Outcome{RunStatus::failed, who + st->detail + " before the run finished"};
  }
  return std::nullopt;
}

asio::awaitable<Status> RunManager::terminate_and_time(int64_t run_id, providers::Provider& p,
                                                       const InstanceHandle& h) {
  (void)s_.ledger.advance(run_id, RunStatus::terminating, "");
  (void)s_.ledger.record_mark(run_id, Phase::poweroff, Mark::begin, s_.clock.now_s(), ClockDomain::daemon);
  const auto deadline = std::chrono::steady_clock::now() + opts_.poweroff_deadline;
  // Every machine of the run (a group's nodes) is terminated until the provider says it is gone.
  std::vector<InstanceHandle> left = providers::node_handles(h);
  Status last;
  for (milliseconds backoff(50);; backoff = std::min(backoff * 2, milliseconds(5000))) {
    std::vector<InstanceHandle> still;
    for (const auto& m : left) {
      last = co_await p.terminate(m);
      bool gone = false;
      if (last) {
        auto st = co_await p.describe(m);
        gone = st && st->state == InstanceState::gone;
      }
      if (!gone) still.push_back(m);
    }
    left = std::move(still);
    if (left.empty()) {
      (void)s_.ledger.record_mark(run_id, Phase::poweroff, Mark::end, s_.clock.now_s(), ClockDomain::daemon);
      co_return Status{};
    }
    if (std::chrono::steady_clock::now() + backoff > deadline) break;
    co_await sleep_for(backoff);
  }
  co_return make_error(Code::timeout, "instance " + left.front().id + " not confirmed gone within " +
                                          std::to_string(opts_.poweroff_deadline.count()) + " s" +
                                          (last ? "" : ": " + last.error().detail));
}

}  // namespace tsum::daemon
