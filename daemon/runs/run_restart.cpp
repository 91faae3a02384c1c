// RunManager (daemon/runs/run_manager_parts.h): where a run's next attempt goes after an interruption (its spot
// recovery policy), and, after the daemon restarts, the runs whose machines still live: adopted, or ended.
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

asio::awaitable<Result<AttemptSpec>> RunManager::next_attempt_of(int64_t run_id, bool same_attempt) {
  auto row = s_.store.run(run_id);
  if (!row) co_return row.error();
  auto exp = s_.store.experiment(row->experiment_id);
  if (!exp) co_return exp.error();
  const auto variant = static_cast<size_t>(row->config_index);
  if (variant >= exp->spec.variants()) co_return make_error(Code::internal, "the run's configuration is gone");
  const RunConfig& config = exp->spec.config_of(variant);
  const auto& policy = config.spot_recovery;
  // Every attempt before the next one was interrupted; a replacement for capacity is no interruption.
  const int interruptions = same_attempt ? row->attempt - 1 : row->attempt;
  if (interruptions > policy.max_interruptions)
    co_return make_error(Code::unavailable, "interrupted " + std::to_string(interruptions) + " times, more than "
                                            "spot_recovery.max_interruptions (" +
                                            std::to_string(policy.max_interruptions) + ")");
  const bool on_demand = config.market != "spot" ||
                         (policy.on_demand_after > 0 && interruptions >= policy.on_demand_after);
  const std::string market = on_demand ? "on-demand" : "spot";
  auto* current = s_.providers.get(row->provider);
  if (!current) co_return make_error(Code::unavailable, "provider '" + row->provider + "' is not configured");

  // The offers the policy allows: the run's type on its provider (in its region under "zone", in any configured
  // region under "region" and "cloud"), and under "cloud" every other spot provider's offers that fit its machine.
  std::vector<providers::Provider*> where{current};
  if (policy.policy == "cloud")
    for (auto* p : s_.providers.all())
      if (p != current && p->capabilities().spot) where.push_back(p);
  auto ck = s_.ledger.last_checkpoint(run_id);
  RecoveryTerms terms{.checkpoint_every_s = static_cast<double>(policy.checkpoint_every_s)};
  if (ck && *ck) terms.checkpoint_bytes = static_cast<double>((*ck)->bytes);
  std::vector<RecoveryOffer> allowed;
  std::vector<std::string> passed;  // why offers were left out, for the error when none is left
  const auto now = std::chrono::steady_clock::now();
  for (auto* p : where) {
    const bool same = p == current;
    const providers::Requirements wanted{.instance_type = same ? row->instance_type : "",
                                         .min_vcpus = same ? 0 : row->machine.value("vcpus", 0),
                                         .gpus = same ? 0 : row->machine.value("gpus", 0)};
    auto offers = co_await p->offers(wanted);
    if (!offers) {
      passed.push_back(std::string(p->name()) + ": " + offers.error().detail);
      continue;
    }
    const std::string home = row->region.empty() && !offers->empty() ? offers->front().region : row->region;
    for (const auto& o : *offers) {
      if (same && policy.policy == "zone" && o.region != home) continue;
      if (!same && !fits(row->machine, o)) continue;
      const std::string key = offer_key(o, market);
      if (o.currency != row->currency) {
        passed.push_back(key + ": priced in " + o.currency + ", the run in " + row->currency);
        continue;
      }
      // A spot offer without a spot quote is priced at on-demand, which bounds it (as at submission).
      const double price = !on_demand && o.spot_hourly_price > 0 ? o.spot_hourly_price : o.hourly_price;
      if (policy.max_price && price > *policy.max_price) {
        passed.push_back(key + ": " + std::to_string(price) + "/h is above max_price");
        continue;
      }
      if (auto held = no_capacity_.find(key); held != no_capacity_.end()) {
        if (now - held->second < kCapacityHold) {
          passed.push_back(key + ": no capacity " +
                           std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now - held->second).count()) +
                           " s ago");
          continue;
        }
        no_capacity_.erase(held);
      }
      RecoveryOffer r{.offer = o, .market = market, .price = price};
      if (!on_demand) {
        auto seen = s_.store.spot_exposure(o.provider, o.instance_type, o.region);  // that region's own record
        auto rate = billing::estimate_spot_rate(seen ? seen->interruptions : 0, seen ? seen->machine_hours : 0,
                                                billing::kSpotPriorRate);
        r.rate_per_hour = rate.rate_per_hour;
        r.rate_basis = rate.basis;
      }
      allowed.push_back(std::move(r));
    }
  }
  if (allowed.empty()) {
    std::string why;
    for (const auto& w : passed) why += (why.empty() ? "" : "; ") + w;
    co_return make_error(Code::unavailable, "no " + market + " offer that spot_recovery.policy \"" + policy.policy +
                                            "\" allows is left" + (why.empty() ? "" : " (" + why + ")"));
  }
  auto ranked = rank_offers(std::move(allowed), terms);
  const auto& best = ranked.front();
  log_line("run " + std::to_string(run_id) + ": next machine " + offer_key(best.o.offer, market) + ", " + best.why);
  co_return AttemptSpec{.provider = best.o.offer.provider,
                        .instance_type = best.o.offer.instance_type,
                        .market = market,
                        .hourly_price = best.o.price,
                        .zone = "",
                        .region = best.o.offer.region,
                        .currency = best.o.offer.currency,
                        .machine = providers::machine_of(best.o.offer)};
}

asio::awaitable<void> RunManager::reconcile() {
  auto unfinished = s_.store.runs_in({RunStatus::provisioning, RunStatus::booting, RunStatus::installing,
                                      RunStatus::loading, RunStatus::starting, RunStatus::learning,
                                      RunStatus::verifying, RunStatus::saving, RunStatus::terminating});
  if (!unfinished) {
    log_line("reconcile: " + unfinished.error().detail);
    co_return;
  }
  std::set<std::string> adopted;  // instance ids of runs taken back: not strays
  for (const auto& r : *unfinished) {
    std::string was(status_name(r.status));
    auto* p = s_.providers.get(r.provider);
    std::string reason;
    bool machine_gone = false;  // no machine of the run is left: a spot run may go on on a next one
    if (!r.instance) {
      machine_gone = true;
      reason = "daemon restarted while the run was " + was + ", before an instance was recorded";
    } else if (!p) {
      reason = "daemon restarted while the run was " + was + "; provider " + r.provider + " is not configured";
    } else {
      auto h = InstanceHandle::from_json(*r.instance);
      bool all_gone = true, all_running = r.status != RunStatus::terminating;
      for (const auto& m : providers::node_handles(h)) {
        auto st = co_await p->describe(m);
        all_gone = all_gone && st && st->state == InstanceState::gone;
        all_running = all_running && st && (st->state == InstanceState::running || st->state == InstanceState::pending);
      }
      if (all_gone) {
        reason = "instance " + h.id + " was gone after a daemon restart (run was " + was + ")";
        machine_gone = true;
      } else if (all_running) {
        // Its machines outlived the restart: the run goes on. Its agent spooled what it sent meanwhile (events,
        // output lines) and sends it now.
        if (auto st = adopt(r, *p, h); st) {
          for (const auto& m : providers::node_handles(h)) adopted.insert(m.id);
          log_line("reconcile: run " + std::to_string(r.id) + " (" + was + ") goes on on instance " + h.id);
          continue;
        } else {
          reason = "daemon restarted while the run was " + was + "; it could not be taken back: " + st.error().detail;
          auto t = co_await terminate_and_time(r.id, *p, h);
          if (!t) reason += "; instance " + h.id + " could not be terminated: " + t.error().detail;
          machine_gone = t.ok();
        }
      } else {
        auto t = co_await terminate_and_time(r.id, *p, h);
        reason = "daemon restarted while the run was " + was + "; instance " + h.id +
                 (t ? " terminated" : " could not be terminated: " + t.error().detail);
        machine_gone = t.ok();
      }
    }
    // A spot run (its current machine spot, or an earlier one) resumes from its last checkpoint on a next machine,
    // as after an interruption; others fail.
    if (machine_gone && (r.market == "spot" || r.attempt > 1) && p) {
      auto next = co_await next_attempt_of(r.id);
      if (next) {
        if (auto st = s_.ledger.next_attempt(r.id, *next, reason, "abandoned"); st) {
          (void)s_.tokens.revoke_run(r.id);
          log_line("reconcile: run " + std::to_string(r.id) + " goes on on a next machine: " + reason);
          continue;
        }
      } else {
        reason += "; " + next.error().detail;
      }
    }
    finish(r.id, RunStatus::failed, reason);
    log_line("reconcile: run " + std::to_string(r.id) + " failed: " + reason);
  }
  // Strays: tagged instances with no live run (none is live yet), e.g. created just before a crash.
  for (auto* p : s_.providers.all()) {
    auto strays = co_await p->list_tagged(opts_.tag);
    if (!strays) {
      log_line("reconcile: cannot list " + std::string(p->name()) + "'s tagged instances: " + strays.error().detail);
      continue;
    }
    for (const auto& h : *strays) {
      if (adopted.count(h.id)) continue;
      auto t = co_await p->terminate(h);
      log_line("reconcile: stray " + std::string(p->name()) + " instance " + h.id +
               (t ? " terminated" : " could not be terminated: " + t.error().detail));
    }
  }
}

Status RunManager::adopt(const RunRow& r, providers::Provider& p, const InstanceHandle& h) {
  auto exp = s_.store.experiment(r.experiment_id);
  if (!exp) return exp.error();
  auto l = std::make_shared<Launch>();
  l->row = r;
  l->provider = &p;
  l->instance = h;
  l->run_deadline = exp->spec.deadline_s ? std::chrono::seconds(*exp->spec.deadline_s) : opts_.run_deadline;
  // The deadlines count from the first create, which the ledger has on the daemon's clock (startup's begin).
  auto phases = s_.ledger.phases(r.id);
  if (!phases) return phases.error();
  double since = 0;
  if (auto it = phases->find(Phase::startup); it != phases->end() && it->second.begin &&
                                              it->second.begin->clock == ClockDomain::daemon)
    since = std::max(0.0, s_.clock.now_s() - it->second.begin->t);
  l->t0 = std::chrono::steady_clock::now() -
          std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(since));
  auto live = std::make_shared<LiveRun>(io_, QueueEntry{r.id, r.experiment_id, r.provider, r.instance_type, r.nodes});
  live_[r.id] = live;
  asio::co_spawn(io_, run_one(live, l), asio::detached);
  return {};
}

}  // namespace tsum::daemon
