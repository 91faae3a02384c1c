// The room daemon/runs/ owns a run's life from the queue to its end: admission (which queued runs start), the run
// manager's coroutine per run (launch, machine watch, restart), the ledger (the one door to a run's status and phase
// marks), the provider's status poller, the watchers of a run's stream and spot recovery. It calls the store to read
// and write runs, config/ for the providers, schedules/ for spend caps, agent/ for what agents report, artifacts/ for
// checkpoints and providers/ to make and end machines; views/, planning/ and api/ read what it writes.
//
// RunManager owns every live run. Each run is one coroutine that provisions an instance, watches the agent's
// progress, and always ends by terminating the instance and timing its poweroff, whatever happened before.
// A dispatcher starts queued runs as the queue limits allow (daemon/runs/admission.h): caps, local cores, fairness.
// The queue is the runs table, so it survives a restart.
//
// At start, reconcile() settles what a previous daemon left behind: every unfinished run's instance is
// terminated (or found gone) and the run marked failed with a reason; tagged strays with no live run are
// terminated. All status changes go through the Ledger.
//
// Budgets (daemon/schedules/budget.h): a picked run starts only if its worst case fits what its caps have left, and a
// live run is stopped (cancelled, reason "budget: ...") once one of its caps is reached; the check runs on
// every poll (RunManagerOptions::poll).
//
// Instances are watched per provider (daemon/runs/status_poller.h): one describe_many call per describe_interval
// for all of a provider's live runs. A run whose agent has not spoken within its provider's startup
// deadline (RunManagerOptions::startup_deadlines, daemon/runs/startup_deadline.h) fails, the reason naming it.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/clock.h"
#include "daemon/runs/admission.h"
#include "daemon/artifacts/datasets.h"
#include "daemon/schedules/budget.h"
#include "daemon/runs/ledger.h"
#include "daemon/config/provider_registry.h"
#include "daemon/runs/status_poller.h"
#include "daemon/store/store.h"
#include "daemon/store/token_store.h"

namespace tsum::daemon {

// Agents reach the daemon at daemon_url when their provider says they can (Capabilities::reaches_daemon: the
// local machine, the trace stand-ins, an ssh tunnel), else at public_url; a run on a provider of the second kind
// fails at once, with the reason, when no public URL is set. Everything else an agent needs it downloads from
// that URL (docs/artifacts.md): the trainer bundle and the data set by content hash.
struct RunManagerOptions {
  std::string daemon_url;       // the daemon's own (loopback) URL
  std::string public_url;       // the URL machines elsewhere use; empty: none
  std::string ca_pem;           // the CA of the daemon's TLS certificate, handed to agents (TSUM_CA_PEM)
  std::string tag = "tsum";     // ownership tag on every instance this daemon creates
  std::string trainer_url;      // the trainer bundle: a URL of the user's, or empty for the daemon's blob
  std::string trainer_sha256;   // its sha256
  std::string agent_sha256;     // the agent script's blob, for boot payloads that fetch it; empty: none
  QueueLimits limits;            // global, per provider and per type caps; local cores
  // create → the agent's first event, by provider name; a provider not named gets its default
  // (default_startup_deadline). Filled from the config file's startup_deadline_s fields.
  std::map<std::string, std::chrono::seconds> startup_deadlines;
  std::chrono::seconds run_deadline{6 * 3600};  // create → save end, for a run whose experiment names no deadline
  std::chrono::seconds poweroff_deadline{300};  // terminate → the provider confirms it is gone
  std::chrono::milliseconds poll{250};
  std::chrono::milliseconds describe_interval{1000};  // how often each provider is asked about its instances
};

struct Services {
  Db& db;
  Ledger& ledger;
  Store& store;
  TokenStore& tokens;
  ProviderRegistry& providers;
  const Clock& clock;
  Budget& budget;  // spend caps: which runs may start, which must stop
  Datasets& datasets;  // the data sets runs download
};

class RunManager {
 public:
  RunManager(boost::asio::io_context& io, Services services, RunManagerOptions opts);
  ~RunManager();

  // Settles the runs and instances a previous daemon left behind. Call once, before start().
  boost::asio::awaitable<void> reconcile();
  // Starts the dispatcher.
  void start();
  // New queued runs exist: look now rather than at the next poll.
  void notify();
  // A provider's cap, from now (the account's quota found after start); the limits in force.
  void set_provider_cap(const std::string& provider, int machines);
  const QueueLimits& limits() const { return opts_.limits; }

  // Cancels a run: a live one is terminated by its coroutine, a queued one is marked cancelled at once.
  // already_exists for a finished run, not_found for an unknown one.
  Status cancel(int64_t run_id, std::string reason);
  // The agent reported an event the run's coroutine must act on.
  void on_agent_event(int64_t run_id, const AgentEvent& ev);
  // A multi-node run's meeting point ({"address", "port"} of its rank 0), posted by node 0's agent; the same
  // one again is fine, another is already_exists. not_found until posted (the other nodes poll).
  Status set_rendezvous(int64_t run_id, nlohmann::json meeting);
  Result<nlohmann::json> rendezvous(int64_t run_id) const;

  // Stops dispatching, cancels every live run and waits (up to deadline) until their instances are gone.
  boost::asio::awaitable<void> shutdown(std::chrono::milliseconds deadline);
  size_t live() const { return live_.size(); }

 private:
  struct LiveRun;
  boost::asio::awaitable<void> dispatch_loop();
  // Starts the runs admit() picked that the budget allows; refuses the ones it never will.
  void start_within_budget(const std::vector<int64_t>& picked, std::map<int64_t, QueueEntry>& by_id);
  struct Launch;
  // A run from its dispatch to its end; an `adopted` one (reconcile(): its machine outlived a daemon restart) is
  // only watched, from where it is, and ended as any other.
  boost::asio::awaitable<void> run_one(std::shared_ptr<LiveRun> live, std::shared_ptr<Launch> adopted = nullptr);
  // A restarted daemon takes back a run whose machines still run: it is live again, watched as before.
  Status adopt(const RunRow& r, providers::Provider& p, const providers::InstanceHandle& h);
  using Outcome = std::pair<RunStatus, std::string>;  // how a run ended, and why
  // The run's body up to (not including) termination: prepare_launch, create_machines, watch.
  boost::asio::awaitable<Outcome> provision_and_watch(LiveRun& live);
  // Reads the run, its experiment and its offer, begins its attempt and builds the agent's LaunchSpec; an
  // outcome if the run ends here.
  boost::asio::awaitable<std::optional<Outcome>> prepare_launch(LiveRun& live, Launch& l);
  // On a provider whose machines keep a cache: the agent in warm-up mode (TSUM_WARM_ONLY) fills it with the run's
  // bundle, image, data set and folder job's setup, unmeasured, before the run's own machine starts. Every run then
  // finds its install and load_data warm, whichever came first. An outcome only when the run was cancelled
  // meanwhile; a warm-up that failed leaves the run to meet the failure itself.
  boost::asio::awaitable<std::optional<Outcome>> warm_machine_cache(LiveRun& live, Launch& l);
  // One create per node (one for a gang provider), each recorded in the ledger as it is made; then booting.
  boost::asio::awaitable<std::optional<Outcome>> create_machines(LiveRun& live, Launch& l);
  // Until the run ends: cancels, the agent's events, deadlines, budget caps, spot notices, the provider's polls.
  boost::asio::awaitable<Outcome> watch(LiveRun& live, const Launch& l);
  // After a spot notice: whether the machine may go now (its checkpoint is held, or nothing was learned yet).
  std::optional<Outcome> after_notice(LiveRun& live, const Launch& l);
  // What the statuses the poller delivered since the last look end, if anything; `waiting` keeps what a
  // pending machine waits for.
  std::optional<Outcome> judge_polled(LiveRun& live, const Launch& l, size_t machines, std::string& waiting);
  // The attempt ends by an interruption: the run goes on on a next machine (run_one).
  static std::optional<Outcome> interrupted(LiveRun& live, std::string why);
  // terminating → terminate → wait until gone, timing poweroff. Returns an error if it could not confirm.
  boost::asio::awaitable<Status> terminate_and_time(int64_t run_id, providers::Provider& p,
                                                    const providers::InstanceHandle& h);
  boost::asio::awaitable<void> sleep_for(std::chrono::milliseconds d);
  // The machine a spot run's next attempt runs on: the offer its spot_recovery.policy allows that is cheapest by
  // expected cost (daemon/runs/recovery.h), at the price in effect, passing over offers whose capacity just ran out;
  // unavailable once the run has been interrupted more often than it allows, or when no offer is left.
  // same_attempt: the current attempt's machine could not be had (capacity): its replacement, not a next one.
  boost::asio::awaitable<Result<AttemptSpec>> next_attempt_of(int64_t run_id, bool same_attempt = false);
  // Offers whose capacity ran out (recovery.h offer_key), and when: passed over for kCapacityHold.
  std::map<std::string, std::chrono::steady_clock::time_point> no_capacity_;
  // The agent's environment for a run of `w` on `p` (docs/artifacts.md), without its run id and token.
  Result<std::map<std::string, std::string>> agent_env(providers::Provider& p, const Workload& w, int gpus);
  // The poller of provider `p` (made on first use).
  std::shared_ptr<StatusPoller> poller_for(providers::Provider& p);
  std::chrono::seconds startup_deadline(const std::string& provider) const;
  void finish(int64_t run_id, RunStatus status, const std::string& reason);

  boost::asio::io_context& io_;
  Services s_;
  RunManagerOptions opts_;
  std::map<int64_t, std::shared_ptr<LiveRun>> live_;
  std::map<std::string, std::shared_ptr<StatusPoller>> pollers_;  // by provider name
  boost::asio::steady_timer dispatch_wake_;
  bool dispatch_due_ = false;  // notify() was called since the last pass began
  bool stopping_ = false;
  bool dispatching_ = false;
  std::string last_dispatch_error_;  // why the last run could not leave the queue, logged once per cause
};

}  // namespace tsum::daemon
