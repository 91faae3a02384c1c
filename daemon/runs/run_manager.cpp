#include "daemon/runs/run_manager.h"

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

std::span<const EmbeddedFile> agent_files();  // compiled in from daemon/agent/

namespace asio = boost::asio;
using providers::InstanceHandle;
using providers::InstanceState;
using std::chrono::milliseconds;

struct RunManager::LiveRun {
  LiveRun(asio::io_context& io, QueueEntry e) : id(e.run_id), entry(std::move(e)), wake(io) {}
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
  asio::steady_timer wake;
  void poke() { wake.cancel(); }
};

namespace {
void log_line(const std::string& s) { std::cerr << "tsumd: " << s << std::endl; }

// How long an offer whose capacity ran out is passed over by the recoveries of every run.
constexpr std::chrono::minutes kCapacityHold{10};
}  // namespace

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

// What provisioning a run needs, gathered before its first create; then the machines it made.
struct RunManager::Launch {
  RunRow row;
  providers::Provider* provider = nullptr;
  std::chrono::seconds run_deadline{0};  // the daemon's, or the experiment's when shorter
  providers::Offer offer;
  providers::LaunchSpec spec;
  std::chrono::steady_clock::time_point t0;  // the first create call: the startup deadline counts from here
  InstanceHandle instance;                   // the machine, or the group of a run's nodes
  bool spot_config = false;                  // its config is a spot one: capacity failures move it (recovery.h)
  std::optional<Error> no_capacity;          // the create failed for capacity, before any machine was recorded
  std::vector<std::pair<std::string, std::string>> resume;  // the checkpoint (URL, sha256) each node goes on from
};

asio::awaitable<RunManager::Outcome> RunManager::provision_and_watch(LiveRun& live) {
  for (int moves = 0;; ++moves) {
    Launch launch;
    if (auto failed = co_await prepare_launch(live, launch)) co_return *failed;
    if (auto failed = co_await warm_machine_cache(live, launch)) co_return *failed;
    auto failed = co_await create_machines(live, launch);
    if (!failed) co_return co_await watch(live, launch);
    if (!launch.no_capacity || moves >= 16) co_return *failed;
    // The offer's capacity ran out before any machine was had: the attempt goes to the next offer its policy
    // allows (the one that failed is passed over now), in place.
    auto to = co_await next_attempt_of(live.id, /*same_attempt=*/true);
    if (!to) co_return Outcome{RunStatus::failed, failed->second + "; " + to.error().detail};
    const nlohmann::json skipped = {{"offer", offer_key(launch.offer, launch.row.market)},
                                    {"error", launch.no_capacity->detail}};
    if (auto st = s_.ledger.move_attempt(live.id, *to, skipped); !st)
      co_return Outcome{RunStatus::failed, failed->second + "; " + st.error().detail};
    (void)s_.tokens.revoke_run(live.id);  // prepare_launch makes the attempt's token again
    log_line("run " + std::to_string(live.id) + ": " + offer_key(launch.offer, launch.row.market) +
             " has no capacity; trying " + to->provider + " " + (to->region.empty() ? "" : to->region + " ") +
             to->instance_type + " " + to->market);
  }
}

asio::awaitable<std::optional<RunManager::Outcome>> RunManager::prepare_launch(LiveRun& live, Launch& l) {
  auto row = s_.store.run(live.id);
  if (!row) co_return Outcome{RunStatus::failed, row.error().detail};
  l.row = *row;
  l.provider = s_.providers.get(row->provider);
  if (!l.provider) co_return Outcome{RunStatus::failed, "provider '" + row->provider + "' is not configured"};
  auto exp = s_.store.experiment(row->experiment_id);
  if (!exp) co_return Outcome{RunStatus::failed, exp.error().detail};
  l.run_deadline = exp->spec.deadline_s
                       ? std::min<std::chrono::seconds>(opts_.run_deadline, std::chrono::seconds(*exp->spec.deadline_s))
                       : opts_.run_deadline;
  if (auto st = s_.ledger.advance(live.id, RunStatus::provisioning, "dispatched"); !st)  // e.g. the disk is full:
    co_return Outcome{st.error().code == Code::unavailable ? RunStatus::queued : RunStatus::failed,  // try later
                      st.error().detail};

  // Named, not a temporary: GCC 12 mishandles temporaries inside co_await expressions.
  const providers::Requirements wanted{.instance_type = row->instance_type};
  auto offers = co_await l.provider->offers(wanted);
  if (!offers || offers->empty())
    co_return Outcome{RunStatus::failed, "no offer for " + row->instance_type +
                                             (offers ? "" : ": " + offers.error().detail)};
  // The run's region (a recovery's pick), else the provider's default: its first offer's.
  auto in_region = std::find_if(offers->begin(), offers->end(),
                                [&](const providers::Offer& o) { return row->region.empty() || o.region == row->region; });
  if (in_region == offers->end())
    co_return Outcome{RunStatus::failed, "no offer for " + row->instance_type + " in region " + row->region};
  l.offer = *in_region;
  const auto variant = static_cast<size_t>(row->config_index);
  if (variant >= exp->spec.variants())
    co_return Outcome{RunStatus::failed, "run names configuration " + std::to_string(variant) + " of " +
                                             std::to_string(exp->spec.variants())};
  const Workload& workload = exp->spec.workload_of(variant);
  const RunConfig& config = exp->spec.config_of(variant);
  l.spot_config = config.market == "spot";
  // Attempt k of a spot run in spot_recovery.zones[(k - 1) % n]: a recovery moves on from where it was taken back.
  const auto& zones = config.spot_recovery.zones;
  const std::string zone = !row->zone.empty() ? row->zone
                           : zones.empty()    ? ""
                                              : zones[static_cast<size_t>(row->attempt - 1) % zones.size()];
  if (auto st = s_.ledger.begin_attempt(live.id, {row->provider, row->instance_type, row->market, row->hourly_price, zone,
                                                  l.offer.region, l.offer.currency});
      !st)
    co_return Outcome{RunStatus::failed, st.error().detail};
  auto env = agent_env(*l.provider, workload, l.offer.gpus);
  if (!env) co_return Outcome{RunStatus::failed, env.error().detail};
  if (row->market == "spot" || row->attempt > 1) {
    // A spot run checkpoints on the notice and every checkpoint_every_s; a later attempt resumes the last one.
    (*env)["TSUM_ATTEMPT"] = std::to_string(row->attempt);
    (*env)["TSUM_CHECKPOINT_EVERY"] = std::to_string(config.spot_recovery.checkpoint_every_s);
    // Each node its own rank's checkpoint, all at one step (create_machines); one machine the newest.
    auto ck = s_.ledger.resume_checkpoints(live.id, row->nodes);
    if (!ck) co_return Outcome{RunStatus::failed, ck.error().detail};
    for (const auto& c : *ck)
      l.resume.push_back({"/v1/runs/" + std::to_string(live.id) + "/artifacts/" + c.artifact, c.sha256});
    if (l.resume.size() == 1) {
      (*env)["TSUM_RESUME_URL"] = l.resume.front().first;
      (*env)["TSUM_RESUME_SHA256"] = l.resume.front().second;
    }
  }
  auto token = s_.tokens.create_for_run(live.id);
  if (!token) co_return Outcome{RunStatus::failed, token.error().detail};

  providers::LaunchSpec& spec = l.spec;
  spec.run_id = std::to_string(live.id);
  spec.tag = opts_.tag;
  // Each attempt its own token: a cloud answers a repeated one with the first attempt's (gone) machine.
  spec.idempotency_token = "run" + std::to_string(live.id) + "-" + opts_.tag +
                           (row->attempt > 1 ? "-a" + std::to_string(row->attempt) : "");
  spec.agent_script = std::string(find_embedded(agent_files(), "tsum-agent.sh"));
  spec.agent_sha256 = opts_.agent_sha256;
  spec.market = row->market;
  spec.zone = zone;
  spec.env = std::move(*env);
  spec.env["TSUM_RUN_ID"] = spec.run_id;
  spec.env["TSUM_TOKEN"] = *token;
  // A job runs in Docker when it names an image (a command job always does); a folder job without one runs on
  // the machine itself.
  if (config.runtime == "docker" || (workload.kind == "job" && !workload.image.empty())) {
    spec.runtime = "docker";
    spec.env["TSUM_RUNTIME"] = "docker";
    spec.env["TSUM_IMAGE"] = workload.image;
    // Registry credentials, when the daemon has them (tsumd's environment, as for the clouds' secrets).
    for (const char* k : {"TSUM_REGISTRY_USER", "TSUM_REGISTRY_PASSWORD"})
      if (const char* v = std::getenv(k); v && *v) spec.env[k] = v;
  }
  if (row->nodes > 1) {
    spec.env["TSUM_NODES"] = std::to_string(row->nodes);
    spec.env["TSUM_DIST"] = config.dist;
  }
  co_return std::nullopt;
}

asio::awaitable<std::optional<RunManager::Outcome>> RunManager::warm_machine_cache(LiveRun& live, Launch& l) {
  if (!l.provider->capabilities().machine_cache || l.row.nodes > 1) co_return std::nullopt;
  providers::LaunchSpec spec = l.spec;
  spec.env["TSUM_WARM_ONLY"] = "1";
  spec.idempotency_token += "-warm";
  auto h = co_await l.provider->create(l.offer, spec);
  if (!h) co_return Outcome{RunStatus::failed, "warming the machine's cache: create failed: " + h.error().detail};
  const auto deadline = std::chrono::steady_clock::now() + l.run_deadline;
  std::string detail = "the run's deadline passed";
  bool ok = false;
  for (milliseconds backoff(50);; backoff = std::min(backoff * 2, milliseconds(500))) {
    if (live.cancel_reason) {
      detail.clear();
      break;
    }
    auto st = co_await l.provider->describe(*h);
    if (st && st->state != InstanceState::running && st->state != InstanceState::pending) {
      detail = st->detail;
      ok = st->exit_status == 0;
      break;
    }
    if (std::chrono::steady_clock::now() + backoff > deadline) break;
    co_await sleep_for(backoff);
  }
  (void)co_await l.provider->terminate(*h);
  if (live.cancel_reason) co_return Outcome{RunStatus::cancelled, *live.cancel_reason};
  // A warm-up is for comparability, not a gate: where it failed, the run goes on and meets the failure itself
  // (with its phases measured and its own reason), or measures a cold install.
  if (!ok) log_line("run " + std::to_string(live.id) + ": the warm-up of the machine's cache failed (" + detail +
                    "; its output is in the run's log); the run goes on");
  co_return std::nullopt;
}

asio::awaitable<std::optional<RunManager::Outcome>> RunManager::create_machines(LiveRun& live, Launch& l) {
  const int nodes = l.row.nodes;
  l.t0 = std::chrono::steady_clock::now();
  (void)s_.ledger.record_mark(live.id, Phase::startup, Mark::begin, s_.clock.now_s(), ClockDomain::daemon);
  // One create per node, each node's startup timed from its own; a gang provider makes them all in one.
  const bool gang = l.provider->capabilities().gang_nodes;
  std::vector<InstanceHandle> created;
  for (int node = 0; node < (gang ? 1 : nodes); ++node) {
    providers::LaunchSpec node_spec = l.spec;
    if (gang) {
      node_spec.nodes = nodes;
    } else if (nodes > 1) {
      node_spec.env["TSUM_NODE"] = std::to_string(node);
      node_spec.idempotency_token += "-n" + std::to_string(node);
      if (l.resume.size() == static_cast<size_t>(nodes)) {  // its rank's checkpoint
        node_spec.env["TSUM_RESUME_URL"] = l.resume[static_cast<size_t>(node)].first;
        node_spec.env["TSUM_RESUME_SHA256"] = l.resume[static_cast<size_t>(node)].second;
      }
    }
    for (int n = gang ? 0 : node; n < (gang ? nodes : node + 1) && nodes > 1; ++n)
      (void)s_.ledger.record_node_mark(live.id, n, Phase::startup, Mark::begin, s_.clock.now_s(), ClockDomain::daemon);
    auto handle = co_await l.provider->create(l.offer, node_spec);
    if (!handle) {
      const std::string why = "create failed" + (nodes > 1 ? " for node " + std::to_string(node) : "") + ": " +
                              handle.error().detail;
      if (l.spot_config && no_capacity(handle.error())) {
        // Passed over by every run's recoveries for a while. With no machine had yet, the attempt moves in place
        // (provision_and_watch); with some nodes up, they go and the run goes on as after an interruption.
        no_capacity_[offer_key(l.offer, l.row.market)] = std::chrono::steady_clock::now();
        if (created.empty()) {
          l.no_capacity = handle.error();
          co_return Outcome{RunStatus::failed, why};
        }
        co_return interrupted(live, why);
      }
      co_return Outcome{RunStatus::failed, why};
    }
    // Fault injection for the leak-guard tests: die as kill -9 would, after the create and before its commit.
    if (const char* f = std::getenv("TSUM_FAULT_EXIT_AFTER_CREATE"); f && std::string_view(f) == "1") _exit(137);
    created.push_back(*handle);
    auto st = gang || nodes == 1 ? s_.ledger.set_instance(live.id, handle->to_json())
                                 : s_.ledger.extend_instance(live.id, providers::make_node_group(l.row.provider, created).to_json());
    if (!st) {
      // Not in the ledger, so run_one would not terminate it: terminate it here (a failure leaves it to the next
      // start's sweep of tagged instances).
      auto t = co_await l.provider->terminate(*handle);
      std::string reason = "could not record instance " + handle->id + ": " + st.error().detail;
      reason += t ? "; it was terminated" : "; terminating it failed: " + t.error().detail;
      co_return Outcome{RunStatus::failed, reason};
    }
  }
  l.instance = gang || nodes == 1 ? created.front() : providers::make_node_group(l.row.provider, created);
  (void)s_.ledger.advance(live.id, RunStatus::booting,
                          nodes > 1 ? std::to_string(nodes) + " nodes created (" + l.instance.id + ")"
                                    : "instance " + l.instance.id + " created");
  co_return std::nullopt;
}

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
      co_return Outcome{RunStatus::failed,
                        "run exceeded its deadline of " + std::to_string(l.run_deadline.count()) + " s"};
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
    if (st && st->state == InstanceState::exited)  // the agent delivers its events before it exits
      return Outcome{RunStatus::failed, who + st->detail + " before the run finished"};
  }
  return std::nullopt;
}

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

Result<std::map<std::string, std::string>> RunManager::agent_env(providers::Provider& p, const Workload& w, int gpus) {
  std::map<std::string, std::string> env;
  std::string url = opts_.daemon_url;
  if (!p.capabilities().reaches_daemon) {
    if (opts_.public_url.empty())
      return make_error(Code::invalid_argument,
                        "provider " + std::string(p.name()) + " runs machines elsewhere, and they cannot reach this "
                        "daemon's " + opts_.daemon_url + ": start tsumd with --public-url URL (or daemon.public_url "
                        "in the config file), an address those machines reach");
    url = opts_.public_url;
  }
  env["TSUM_URL"] = url;
  if (url.starts_with("https://") && !opts_.ca_pem.empty()) env["TSUM_CA_PEM"] = opts_.ca_pem;
  // Paths under TSUM_URL are the daemon's own: the agent prefixes them, and sends its token only there.
  env["TSUM_TRAINER_URL"] = opts_.trainer_url.empty() ? "/v1/blobs/" + opts_.trainer_sha256 : opts_.trainer_url;
  env["TSUM_TRAINER_SHA256"] = opts_.trainer_sha256;
  if (w.dataset.empty()) {
    // Reads no data set: resnet50's synthetic data, or the inference sweep and a serving client sending JPEGs,
    // which make their JPEGs in load_data.
    if (w.kind == "infer" || (w.kind == "serve" && w.input == "jpeg")) {  // infer: both sources read JPEGs
      int most = w.kind == "serve" ? w.batch.value_or(1) : 1;
      for (int b : w.batches) most = std::max(most, b);
      const int side = w.model.starts_with("mnist") ? 28
                       : w.model.starts_with("cifar") ? 32
                       : w.model == "delay"           ? 8
                                                      : 224;  // its input
      env["TSUM_GEN_IMAGES"] = "--n " + std::to_string(std::max(64, 2 * most)) + " --size " + std::to_string(side);
    }
  } else if (!w.dataset_url.empty()) {
    env["TSUM_DATA_URL"] = w.dataset_url;
    env["TSUM_DATA_SHA256"] = w.dataset_sha256;
    env["TSUM_DATA_FORMAT"] = w.dataset_format;
    env["TSUM_DATA_NAME"] = w.dataset;
  } else {
    auto d = s_.datasets.get(w.dataset);
    if (!d) return make_error(Code::invalid_argument, "data set '" + w.dataset + "': " + d.error().detail);
    env["TSUM_DATA_URL"] = "/v1/blobs/" + d->sha256;
    env["TSUM_DATA_SHA256"] = d->sha256;
    env["TSUM_DATA_FORMAT"] = d->format;
    env["TSUM_DATA_NAME"] = d->name;
  }
  env["TSUM_KIND"] = w.kind;
  if (w.kind == "job") {
    // The job's argv and environment as shell words (single-quoted), for the agent's `eval "set -- ..."`.
    auto quoted = [](const std::string& v) {
      std::string q = "'";
      for (char c : v) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
      return q + "'";
    };
    std::string argv, vars;
    for (const auto& a : w.command) argv += (argv.empty() ? "" : " ") + quoted(a);
    for (const auto& [k, v] : w.env) vars += (vars.empty() ? "" : " ") + std::string("-e ") + quoted(k + "=" + v);
    if (!w.command.empty()) env["TSUM_JOB_COMMAND"] = argv;
    env["TSUM_JOB_ENV"] = vars;
    if (!w.run.empty()) env["TSUM_JOB_RUN"] = w.run;
    if (!w.setup.empty()) env["TSUM_JOB_SETUP"] = w.setup;
    if (!w.workdir_sha256.empty()) {
      env["TSUM_WORKDIR_URL"] = "/v1/blobs/" + w.workdir_sha256;
      env["TSUM_WORKDIR_SHA256"] = w.workdir_sha256;
    }
  } else {
    env["TSUM_TRAIN_ARGS"] = w.train_args(gpus);
    if (w.kind == "serve") env["TSUM_LOAD_ARGS"] = w.load_args();
  }
  return env;
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
  l->run_deadline = exp->spec.deadline_s
                        ? std::min<std::chrono::seconds>(opts_.run_deadline, std::chrono::seconds(*exp->spec.deadline_s))
                        : opts_.run_deadline;
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
