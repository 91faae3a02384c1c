// The room daemon/views/ owns what is read: each run's JSON (phases, t_sum, cost under every rule), the paged lists,
// the sums kept as runs settle (totals, the experiment summary) and /metrics. It calls the store, runs/ (statuses),
// schedules/ (budgets), planning/ (spot risk), providers/ and billing/prices/.
//
// The JSON the API returns for runs: phases in seconds, t_sum, metrics, cost under each billing rule. An
// experiment's detail (api/routes/rest_routes.cpp) lists a page of them, with its summary from the sums the database keeps
// (daemon/views/experiment_summary.h).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/lru.h"
#include "daemon/runs/ledger.h"
#include "daemon/views/listing.h"
#include "daemon/store/store.h"

namespace tsum::daemon {

class Views {
 public:
  Views(Store& store, Ledger& ledger);
  Store& store() const { return store_; }

  Result<nlohmann::json> run(int64_t run_id);
  // run() as JSON text, with a strong ETag of it. A finished run's text is kept until forget(run_id): the
  // ledger tells of every change to a run (Ledger::set_observer), and a finished run takes none but a late
  // instance handle or mark, which forget() drops it for.
  struct Body {
    std::string text, etag;
  };
  Result<std::shared_ptr<const Body>> run_body(int64_t run_id);
  // A run changed: its body and list row are built again when next asked for.
  void forget(int64_t run_id);
  // Every run of an experiment as run() shows it, in {"id", "name", "created_at", "spec", "runs": [...]}: what an
  // export writes and a serving plan reads.
  Result<nlohmann::json> experiment(int64_t experiment_id);
  // A run of a list (GET /v1/runs): run() without its epochs and resource statistics.
  Result<nlohmann::json> list_row(const RunRow& r);
  // list_row() of run `r.id` as JSON text; a finished run's is kept like its body, so a page of finished runs is
  // mostly copies, and the run's row is read only when its text is not kept.
  Result<std::shared_ptr<const std::string>> list_row_text(const RunRef& r);

 private:
  Result<nlohmann::json> run_json(const RunRow& r, const ExperimentRow& e);
  // A run of several attempts: each one as JSON, their bills per rule, learning redone, first create to last
  // poweroff.
  struct Attempts {
    nlohmann::json attempts = nlohmann::json::array();
    std::map<std::string, double> billed_s, amount;  // by rule
    double lost_s = 0;
    std::optional<double> wall_s;
  };
  Result<Attempts> attempts_json(const RunRow& r, const std::vector<billing::BillingRule>& rules);

  Store& store_;
  Ledger& ledger_;
  // Finished runs' bodies and list rows, least recently used first out past their byte budgets.
  static constexpr size_t kRunBodyBytes = 32 << 20, kRunRowBytes = 16 << 20;
  Lru<int64_t, std::shared_ptr<const Body>> finished_{kRunBodyBytes};
  Lru<int64_t, std::shared_ptr<const std::string>> finished_rows_{kRunRowBytes};
};

// An experiment's progress from its runs counted by status ({"runs", "finished", "done", "failed", "cancelled"}),
// and its status: queued while every run is, running until every run has finished, then done when all are done,
// failed when any failed, else cancelled.
nlohmann::json progress_of(const std::map<std::string, int64_t>& by_status);
std::string experiment_status(const std::map<std::string, int64_t>& by_status);

// What the agent saw of a run's memory while it learned (billing::MeasuredRun::memory_used): the learn phase's
// peak resident bytes over its machine's memory, from a run view's stats and machine; nullopt where either is
// unknown.
std::optional<double> learn_memory_used(const nlohmann::json& run_view);

}  // namespace tsum::daemon
