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

RunManager::RunManager(asio::io_context& io, Services services, RunManagerOptions opts)
    : io_(io), s_(services), opts_(std::move(opts)), dispatch_wake_(io) {}

RunManager::~RunManager() = default;

asio::awaitable<void> RunManager::sleep_for(milliseconds d) {
  asio::steady_timer t(io_, d);
  boost::system::error_code ec;
  co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

std::shared_ptr<StatusPoller> RunManager::poller_for(providers::Provider& p) {
  auto& poller = pollers_[std::string(p.name())];
  if (!poller) poller = StatusPoller::make(io_, p, opts_.describe_interval);
  return poller;
}

std::chrono::seconds RunManager::startup_deadline(const std::string& provider) const {
  auto it = opts_.startup_deadlines.find(provider);
  return it == opts_.startup_deadlines.end() ? default_startup_deadline(provider) : it->second;
}

void RunManager::start() {
  if (dispatching_) return;
  dispatching_ = true;
  asio::co_spawn(io_, dispatch_loop(), asio::detached);
}

void RunManager::set_provider_cap(const std::string& provider, int machines) {
  opts_.limits.per_provider[provider] = std::max(1, machines);
  notify();
}

void RunManager::notify() {
  if (dispatch_due_) return;  // a pass is coming, and it will see this change too
  dispatch_due_ = true;
  dispatch_wake_.cancel();
}

asio::awaitable<void> RunManager::dispatch_loop() {
  // Passes are at least kDispatchSpacing apart: the runs that end in a burst (hundreds a second on the trace
  // provider) share a pass instead of each paying one, and a lone change still gets one at once.
  constexpr auto kDispatchSpacing = milliseconds(5);
  auto last_pass = std::chrono::steady_clock::now() - kDispatchSpacing;
  boost::system::error_code ec;
  while (!stopping_) {
    if (auto since = std::chrono::steady_clock::now() - last_pass; since < kDispatchSpacing) {
      dispatch_wake_.expires_after(kDispatchSpacing - since);
      co_await dispatch_wake_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      if (stopping_) break;
    }
    dispatch_due_ = false;
    last_pass = std::chrono::steady_clock::now();
    if (static_cast<int>(live_.size()) < opts_.limits.global) {
      // Each experiment's oldest queued runs, twice as many as could start now (and at least 16): enough for a
      // later run that fits to pass an earlier one that waits for cores, without reading a queue of 100,000, or
      // 128 runs of each queued experiment for the one slot a finished run just freed (8% of the daemon at 64 runs
      // at once, perf), on every dispatch.
      const int64_t free_slots = int64_t{opts_.limits.global} - static_cast<int64_t>(live_.size());
      auto queued = s_.store.queue_heads(std::max<int64_t>(16, 2 * free_slots));
      if (!queued) log_line("dispatcher: " + queued.error().detail);
      std::vector<QueueEntry> waiting = queued ? std::move(*queued) : std::vector<QueueEntry>{};
      std::vector<QueueEntry> running;
      std::map<int64_t, QueueEntry> by_id;
      for (const auto& e : waiting) by_id[e.run_id] = e;
      for (const auto& [_, l] : live_) running.push_back(l->entry);
      start_within_budget(admit(waiting, running, opts_.limits), by_id);
    }
    if (dispatch_due_) continue;  // something changed during the pass
    dispatch_wake_.expires_after(milliseconds(500));
    co_await dispatch_wake_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
}

void RunManager::start_within_budget(const std::vector<int64_t>& picked, std::map<int64_t, QueueEntry>& by_id) {
  for (int64_t id : picked) {
    std::set<int64_t> live;
    for (const auto& [live_id, _] : live_) live.insert(live_id);
    auto verdict = s_.budget.admit(id, live);
    if (!verdict) {
      // A database that cannot be read now is tried again at the next dispatch; anything else (a stored spec
      // that no longer parses) fails the run once, with the reason, instead of retrying it forever.
      if (verdict.error().code == Code::unavailable) {
        if (verdict.error().detail != last_dispatch_error_)
          log_line("run " + std::to_string(id) + " stays queued: " + verdict.error().detail);
        last_dispatch_error_ = verdict.error().detail;
        continue;
      }
      if (auto st = s_.ledger.advance(id, RunStatus::failed, "not admitted: " + verdict.error().detail); !st)
        log_line("run " + std::to_string(id) + ": " + st.error().detail);
      continue;
    }
    if (verdict->verdict == Budget::Verdict::refuse) {
      if (auto st = s_.ledger.advance(id, RunStatus::cancelled, verdict->reason); !st)
        log_line("run " + std::to_string(id) + ": " + st.error().detail);
      continue;
    }
    if (verdict->verdict == Budget::Verdict::wait) continue;
    auto live_run = std::make_shared<LiveRun>(io_, by_id[id]);
    live_[id] = live_run;
    asio::co_spawn(io_, run_one(live_run), asio::detached);
  }
}

void RunManager::finish(int64_t run_id, RunStatus status, const std::string& reason) {
  if (auto s = s_.ledger.advance(run_id, status, reason); !s)
    log_line("run " + std::to_string(run_id) + ": " + s.error().detail);
  (void)s_.tokens.revoke_run(run_id);
}

asio::awaitable<void> RunManager::run_one(std::shared_ptr<LiveRun> live, std::shared_ptr<Launch> adopted) {
  std::pair<RunStatus, std::string> outcome{RunStatus::failed, "internal error"};
  try {
    if (adopted) outcome = co_await watch(*live, *adopted);
    else outcome = co_await provision_and_watch(*live);
  } catch (const std::exception& e) {
    outcome = {RunStatus::failed, std::string("internal error: ") + e.what()};
  }
  // Whatever happened, an instance that was created is terminated before the run is finished.
  auto row = s_.store.run(live->id);
  if (row && row->instance && !is_terminal(row->status)) {
    auto* p = s_.providers.get(row->provider);
    auto h = InstanceHandle::from_json(*row->instance);
    // Plain statements around co_await: GCC 12 miscompiles co_await inside ?: and with temporaries.
    Status st = make_error(Code::internal, "provider " + row->provider + " vanished");
    if (p) st = co_await terminate_and_time(live->id, *p, h);
    if (!st) {
      outcome = {RunStatus::failed, outcome.second + (outcome.second.empty() ? "" : "; ") +
                                        "terminate failed: " + st.error().detail};
      live->interrupted.reset();  // a machine not confirmed gone: no next one
    }
  }
  if (live->interrupted && !stopping_) {
    // The attempt's machine is gone: the run goes back to the queue for its next machine, or fails once it has
    // been interrupted as often as its spot_recovery allows.
    auto next = co_await next_attempt_of(live->id);
    if (!next) {
      outcome = {RunStatus::failed, *live->interrupted + "; " + next.error().detail};
    } else {
      auto st = s_.ledger.next_attempt(live->id, *next, *live->interrupted);
      if (st) {
        log_line("run " + std::to_string(live->id) + ": " + *live->interrupted + "; next attempt on " +
                 next->market + " " + next->instance_type);
        (void)s_.tokens.revoke_run(live->id);
        live_.erase(live->id);
        notify();
        co_return;
      }
      outcome = {RunStatus::failed, *live->interrupted + "; " + st.error().detail};
    }
  } else if (live->interrupted) {
    outcome = {RunStatus::cancelled, "daemon shutting down; " + *live->interrupted};
  }
  if (outcome.first == RunStatus::queued) {  // never left the queue: the dispatcher tries it again
    if (outcome.second != last_dispatch_error_)
      log_line("run " + std::to_string(live->id) + " stays queued: " + outcome.second);
    last_dispatch_error_ = outcome.second;
    live_.erase(live->id);
    co_return;  // no notify(): the next dispatch is the regular one, half a second on
  }
  last_dispatch_error_.clear();
  // The end must reach the ledger: while the database cannot be written (its disk is full), the run stays live
  // and the write is retried each second, until it commits or the daemon stops (the next start settles it then).
  if (row && !is_terminal(row->status)) {
    for (bool logged = false;;) {
      auto st = s_.ledger.advance(live->id, outcome.first, outcome.second);
      if (st || st.error().code != Code::unavailable || stopping_) {
        if (!st) log_line("run " + std::to_string(live->id) + ": " + st.error().detail);
        break;
      }
      if (!std::exchange(logged, true))
        log_line("run " + std::to_string(live->id) + ": its end waits for the database: " + st.error().detail);
      const milliseconds retry{1000};  // named: GCC 12 mishandles temporaries inside co_await expressions
      co_await sleep_for(retry);
    }
    (void)s_.tokens.revoke_run(live->id);
  }
  live_.erase(live->id);
  notify();
}

Status RunManager::cancel(int64_t run_id, std::string reason) {
  if (auto it = live_.find(run_id); it != live_.end()) {
    if (!it->second->cancel_reason) it->second->cancel_reason = std::move(reason);
    it->second->poke();
    return {};
  }
  auto st = s_.ledger.status(run_id);
  if (!st) return st.error();
  if (is_terminal(*st))
    return make_error(Code::already_exists, "run " + std::to_string(run_id) + " is already " +
                                                std::string(status_name(*st)));
  // Not live and not finished: still queued (a live run is always in live_).
  return s_.ledger.advance(run_id, RunStatus::cancelled, reason);
}

void RunManager::on_agent_event(int64_t run_id, const AgentEvent& ev) {
  auto it = live_.find(run_id);
  if (it == live_.end()) return;
  LiveRun& live = *it->second;
  if (ev.kind == AgentEvent::Kind::interrupted) {
    live.noticed = true;
    if (!live.noticed_at) live.noticed_at = std::chrono::steady_clock::now();
    live.poke();
    return;
  }
  if (ev.kind == AgentEvent::Kind::checkpoint) {
    // The one written at the notice (a periodic one may still have been on its way).
    const auto& trainer = ev.attrs.contains("trainer") ? ev.attrs["trainer"] : nlohmann::json::object();
    if (live.noticed && trainer.is_object() && trainer.value("reason", "") == "signal") {
      live.checkpointed_nodes.insert(ev.node);  // every rank checkpoints at the step they agreed on
      live.checkpointed_after_notice = static_cast<int>(live.checkpointed_nodes.size()) >= live.entry.nodes;
      live.poke();
    }
    return;
  }
  // After a notice, what fails on the machine is the interruption's doing: the run goes on elsewhere.
  if (ev.kind == AgentEvent::Kind::error && live.noticed) return;
  if (ev.kind == AgentEvent::Kind::error && !it->second->agent_error)
    it->second->agent_error = (it->second->entry.nodes > 1 ? "node " + std::to_string(ev.node) + ": " : "") +
                              std::string(phase_name(ev.phase)) + " failed: " + ev.attrs.value("detail", "");
  if (ev.kind == AgentEvent::Kind::end && ev.phase == Phase::save) {
    // A multi-node run has saved once every node has (the ledger then wrote the run's own save end).
    auto phases = s_.ledger.phases(run_id);
    it->second->saved = phases && phases->count(Phase::save) && (*phases)[Phase::save].end;
  }
  // The run's loop looks at the agent's first event (startup ends), an error and save's end; progress and the
  // other marks change nothing it decides (a thousand live runs post many of those).
  if (!it->second->alive || it->second->agent_error || it->second->saved) it->second->poke();
}

Status RunManager::set_rendezvous(int64_t run_id, nlohmann::json meeting) {
  auto it = live_.find(run_id);
  if (it == live_.end())
    return make_error(Code::already_exists, "run " + std::to_string(run_id) + " is not running");
  if (it->second->entry.nodes < 2)
    return make_error(Code::invalid_argument, "run " + std::to_string(run_id) + " runs on one machine: it has no rendezvous");
  if (it->second->rendezvous && *it->second->rendezvous != meeting)
    return make_error(Code::already_exists, "run " + std::to_string(run_id) + "'s nodes already meet at " +
                                                it->second->rendezvous->dump());
  it->second->rendezvous = std::move(meeting);
  return {};
}

Result<nlohmann::json> RunManager::rendezvous(int64_t run_id) const {
  auto it = live_.find(run_id);
  if (it == live_.end()) return make_error(Code::not_found, "run " + std::to_string(run_id) + " is not running");
  if (!it->second->rendezvous) return make_error(Code::not_found, "node 0 has not said where to meet yet");
  return *it->second->rendezvous;
}

asio::awaitable<void> RunManager::shutdown(std::chrono::milliseconds deadline) {
  stopping_ = true;
  dispatch_wake_.cancel();
  for (auto& [id, live] : live_) {
    if (!live->cancel_reason) live->cancel_reason = "daemon shutting down";
    live->poke();
  }
  auto until = std::chrono::steady_clock::now() + deadline;
  while (!live_.empty() && std::chrono::steady_clock::now() < until) co_await sleep_for(milliseconds(20));
  if (live_.empty()) co_return;
  // What is left stays as the ledger has it (no status is invented): the next start's reconcile() terminates
  // those instances and settles the runs.
  std::string ids;
  for (const auto& [id, live] : live_) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
  log_line("shutdown: grace period over with " + std::to_string(live_.size()) + " run(s) still terminating (" +
           ids + "); the next start settles them");
}

}  // namespace tsum::daemon
