// The room daemon/planning/ owns what the planner learns from and the searches: the plan history kept as runs settle,
// past runs as trace rows, spot risk from the ledger, and the search runner (billing/search over real probe runs). It
// calls billing/ for the math, the store, experiments/ and runs/ to queue probes, views/ to price them, config/ and
// artifacts/.
//
// SearchRunner: adaptive searches over configurations (POST /v1/searches). Each search runs
// billing::adaptive_search (billing/search/search.h) on a thread of its own; every probe it asks for is a real run: a
// one-config, one-repetition experiment queued through the Store and run by the RunManager, whose ledger phases
// become the probe's measurement. All database work happens on the daemon's executor; the search thread only
// waits for probe results (with a deadline) and hands its outcome back there.
//
// Request: {"workload": {...an experiment's workload...}, "candidates": [{"provider", "instance_type"}, ...],
//           "objective": "cost"|"time"|"cost_under_deadline"|"budget",
//           optional "probe_budget" (money), "budget_share" (of the planned runs' cost at the best measured config;
//           0.1 when neither is given), "deadline_s", "budget", "max_probes", "future_runs", "billing" (a rule spec
//           for every candidate; default: each provider's rule, else per_second_60s_min)}
// Persisted in the searches table (sql/0005_searches.sql), each round as it is known; each probe's experiment
// carries the search's id (experiments.search_id), shown as "search_id" on the experiment and its run. A search
// that was running when the daemon stopped is marked failed at the next start.
//
// Budget (billing/search/search.h): a probe is started only when the spend so far plus its p90 cost fits the budget, and
// runs with the deadline the rest of the budget buys, so that a probe slower than its p90 is stopped there; a
// failed probe's measured phases are billed to the search all the same.
#pragma once

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "billing/measured_run.h"
#include "billing/search/search.h"
#include "common/clock.h"
#include "daemon/artifacts/datasets.h"
#include "daemon/store/db.h"
#include "daemon/experiments/experiment_spec.h"
#include "daemon/views/listing.h"
#include "daemon/config/provider_registry.h"
#include "daemon/store/store.h"
#include "daemon/views/views.h"

namespace tsum::daemon {

struct SearchServices {
  Db& db;
  Store& store;
  Views& views;
  ProviderRegistry& providers;
  Datasets& datasets;
  const Clock& clock;
  std::function<void()> runs_queued;  // wakes the run manager's dispatcher
};

class SearchRunner {
 public:
  SearchRunner(boost::asio::io_context& io, SearchServices s);
  ~SearchRunner();  // stops and joins every search thread

  // Validates and prices the request, stores it and starts the search. invalid_argument names the field.
  boost::asio::awaitable<Result<int64_t>> start(const nlohmann::json& request);
  // {"id", "status", "reason", "request", "probes", from its first probe on "trace", "rounds", "tolerance",
  //  "spent" ("next": the probe under way while running), and once done "recommendation", "p_within", "stop_reason", "plan"}. not_found for an unknown id.
  Result<nlohmann::json> get(int64_t id);
  // A page of searches by id, in brief: {"id", "status", "reason", "probes" (how many), "spent", "budget",
  // "recommendation" (its config, or null), "created_at", "updated_at"}.
  Result<PageOf<nlohmann::json>> list(const PageRequest& page);
  // Probes still waiting fail with "cancelled"; no new probe starts.
  void stop();

 private:
  struct Search;
  using ProbePromise = std::promise<Result<billing::MeasuredRun>>;
  Result<billing::MeasuredRun> probe(std::shared_ptr<Search> s, const billing::PlanCandidate& c,
                                     const billing::ProbeSpec& spec);
  boost::asio::awaitable<void> probe_run(std::shared_ptr<Search> s, RunConfig config, std::optional<int> deadline_s,
                                         std::shared_ptr<ProbePromise> done);
  boost::asio::awaitable<Result<billing::MeasuredRun>> await_run(int64_t run_id, size_t probe_index,
                                                                 std::optional<int> deadline_s,
                                                                 std::shared_ptr<Search> s);
  boost::asio::awaitable<Result<billing::PlanCandidate>> candidate(const RunConfig& c, const std::string& billing);
  void finish(std::shared_ptr<Search> s, Result<billing::SearchResult> r);
  Status save(const Search& s, std::string_view status, std::string_view reason, const nlohmann::json* result);

  boost::asio::io_context& io_;
  SearchServices s_;
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> threads_;
};

}  // namespace tsum::daemon
