// Paged, filtered lists of runs and experiments, evaluated by SQLite (issue 61). A page is `limit` rows in id
// order after (or, descending, before) the last id of the previous page; each filter has an index of its own
// (sql/0013_totals.sql), so a page reads the rows it returns, plus at most one, whatever the history holds. Totals
// come from the counters the database keeps (run_counts, status_counts) where the filter allows, else from a
// COUNT(*) over the filter's index.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "daemon/store/db.h"
#include "daemon/runs/run_status.h"
#include "daemon/store/store.h"

namespace tsum::daemon {

struct PageRequest {
  static constexpr int kDefaultLimit = 100;
  static constexpr int kMaxLimit = 1000;
  int limit = kDefaultLimit;
  std::optional<int64_t> after;  // the last id of the previous page
  bool descending = false;       // newest first
};

struct RunFilter {
  std::vector<RunStatus> statuses;  // any of them; empty: any status
  std::optional<int64_t> experiment_id;
  std::optional<std::string> provider;
  std::optional<std::string> instance_type;  // the config's machine
  std::optional<int64_t> schedule_id;        // runs of the experiments the schedule fired
  std::optional<double> created_after, created_before;  // unix seconds: after < created_at < before
};

struct ExperimentFilter {
  std::optional<int64_t> schedule_id;
  std::optional<int64_t> search_id;
  std::optional<double> created_after, created_before;
};

template <class Row>
struct PageOf {
  std::vector<Row> rows;
  std::optional<int64_t> next_after;  // set when more rows follow: the id the next page starts after
  int64_t total = 0;                  // rows that match the filter, every page together
};

// A run of a page: its id and status, all a kept row text needs (Views::list_row_text reads the rest on a miss).
struct RunRef {
  int64_t id = 0;
  RunStatus status = RunStatus::queued;
};

// An experiment's runs counted by status (from run_counts).
using StatusCounts = std::map<std::string, int64_t>;

class Listing {
 public:
  Listing(Db& db, Store& store) : db_(db), store_(store) {}

  Result<PageOf<RunRef>> runs(const RunFilter& f, const PageRequest& page);
  Result<PageOf<ExperimentRow>> experiments(const ExperimentFilter& f, const PageRequest& page);
  // Runs by status, of one experiment or (nullopt) of all: read from the counters, a row per status.
  Result<StatusCounts> status_counts(std::optional<int64_t> experiment_id = std::nullopt);

 private:
  Result<int64_t> count(const std::string& sql, const std::vector<SqlValue>& args);

  Db& db_;
  Store& store_;
};

}  // namespace tsum::daemon
