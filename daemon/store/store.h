// The room daemon/store/ owns the SQLite file: the connection (db), the one-daemon lock, group commit, the WAL
// checkpointer, experiments and runs (status only through runs/ledger), tokens, retention and export. Everything in
// daemon/ reads and writes through it; of the other rooms it takes only types (runs/, experiments/, artifacts/).
//
// Reading and creating experiments and runs. Status changes do not happen here: they go through the
// Ledger. Creating an experiment inserts it and all its runs (queued) in one transaction.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/lru.h"
#include "daemon/runs/admission.h"
#include "daemon/store/db.h"
#include "daemon/experiments/experiment_spec.h"
#include "daemon/runs/run_status.h"

namespace tsum::daemon {

struct RunRow {
  int64_t id = 0;
  int64_t experiment_id = 0;
  int config_index = 0;
  int repetition = 0;
  std::string provider;
  std::string instance_type;
  double hourly_price = 0;
  std::string currency;
  RunStatus status = RunStatus::queued;
  std::string reason;
  std::optional<nlohmann::json> instance;
  double created_at = 0;
  double updated_at = 0;
  int nodes = 1;  // machines the run trains on (its config's "nodes")
  std::optional<double> queue_wait_s;  // its wait in a scheduler's queue (Slurm), part of startup
  nlohmann::json machine = nlohmann::json::object();  // providers::machine_of its offer (runs.machine)
  int attempt = 1;                  // which machine of the run this is (a spot run's interruptions add more)
  std::string market = "on-demand";  // the current attempt's market
  std::string region;                // the current attempt's region ("": the provider's default)
  std::string zone;                  // its zone, where a recovery chose one ("": the provider's own)
};

struct ExperimentRow {
  int64_t id = 0;
  std::string name;
  ExperimentSpec spec;
  double created_at = 0;
  std::optional<int64_t> schedule_id;  // the schedule that fired it
  std::optional<int64_t> search_id;    // the search it is a probe of
  std::string unreadable;  // why its stored spec does not parse (a bug, an older version); then spec is empty
};

// Price of one config, looked up by the caller from the provider's offers.
struct PricedConfig {
  RunConfig config;
  double hourly_price = 0;
  std::string currency;
  nlohmann::json machine = nlohmann::json::object();  // providers::machine_of the offer
};

// A type's spot machines as tsum saw them: attempts that ended, how many the cloud took back, and their machine
// time (dispatch to end, daemon clock).
struct SpotExposure {
  int attempts = 0;
  int interruptions = 0;
  double machine_hours = 0;
};

class Store {
 public:
  Store(Db& db, const Clock& clock) : db_(db), clock_(clock) {}

  // Inserts the experiment and repetitions × variants queued runs. priced[i] belongs to spec.configs[i].
  // schedule_id: the schedule that fired it; search_id: the search it is a probe of, if any.
  Result<int64_t> create_experiment(const ExperimentSpec& spec, const std::vector<PricedConfig>& priced,
                                    std::optional<int64_t> schedule_id = std::nullopt,
                                    std::optional<int64_t> search_id = std::nullopt);
  Result<ExperimentRow> experiment(int64_t id);
  // experiment() where a stored spec that no longer parses is no error: the row says why (unreadable), so a
  // listing can show it, marked, instead of failing as a whole.
  Result<ExperimentRow> experiment_as_stored(int64_t id);
  // True inside a transaction not yet committed: what is read now may still be rolled back.
  bool in_transaction() const { return db_.in_transaction(); }
  // Every experiment as stored, the unreadable ones too (marked).
  Result<std::vector<ExperimentRow>> experiments();
  // Every experiment's id, ascending.
  Result<std::vector<int64_t>> experiment_ids();
  Result<RunRow> run(int64_t id);
  Result<std::vector<RunRow>> runs_of(int64_t experiment_id);
  // Runs in any of the given statuses, oldest first.
  Result<std::vector<RunRow>> runs_in(std::initializer_list<RunStatus> statuses);
  // The dispatcher's view of the queue: the `per_experiment` oldest queued runs of each experiment that has
  // any, oldest first. It reads the kept counters and an index, so its cost is what it returns, however many
  // runs wait behind those heads.
  Result<std::vector<QueueEntry>> queue_heads(int64_t per_experiment);
  // The trainer's per-epoch samples of a run, in epoch order.
  Result<std::vector<nlohmann::json>> epochs_of(int64_t run_id);
  // The ended spot attempts of `provider`'s `instance_type`, every run's.
  // region: that region's alone ("" the provider's default region's and those recorded without one); nullopt:
  // every region's.
  Result<SpotExposure> spot_exposure(const std::string& provider, const std::string& instance_type,
                                     const std::optional<std::string>& region = std::nullopt);
  // The runs `where` selects ("WHERE ... ORDER BY ... LIMIT ?"), binding args in order (daemon/views/listing.h).
  Result<std::vector<RunRow>> query_runs(std::string_view where, const std::vector<SqlValue>& args);

 private:

  Db& db_;
  const Clock& clock_;
  // Experiments never change once written, so each is parsed once (every run view needs its spec). Filled only
  // outside transactions (a rolled-back id may be used again); the least recently used go first past 4,096.
  Lru<int64_t, ExperimentRow> experiments_{4096};
};

}  // namespace tsum::daemon
