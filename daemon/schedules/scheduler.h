// The room daemon/schedules/ owns what fires by itself and what caps spend: cron expressions, the scheduler (each due
// time fired once, through experiments/submit) and the budgets per experiment, schedule and provider. It calls the
// store, experiments/, runs/, config/, artifacts/ and views/ (the settled sums).
//
// Schedules: an experiment body fired by a cron expression (daemon/schedules/cron.h) in a time zone, stored in SQLite
// so they survive restarts.
//
// Firing. One coroutine sleeps until the earliest due schedule (waking at least once a minute, so a wall-clock
// jump is noticed) and fires it: the experiment is priced through the same door as POST /v1/experiments and
// queued, tagged with the schedule. A due time fires at most once: its row in schedule_firings is written in
// the same transaction as the experiment.
//
// Missed firings. A due time more than kLateAfter in the past (the daemon was down, or the machine slept) is
// missed. Each schedule says what to do: "skip" records it as skipped; "catch_up" fires once now, however many
// due times were missed. Either way the schedule then moves to its next due time after now.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "daemon/artifacts/datasets.h"
#include "daemon/schedules/cron.h"
#include "daemon/store/db.h"
#include "daemon/experiments/experiment_spec.h"
#include "daemon/views/listing.h"
#include "daemon/config/provider_registry.h"
#include "daemon/schedules/schedule_spec.h"
#include "daemon/store/store.h"

namespace tsum::daemon {

class Scheduler {
 public:
  static constexpr std::chrono::seconds kLateAfter{60};

  Scheduler(boost::asio::io_context& io, Db& db, Store& store, ProviderRegistry& providers, Datasets& datasets,
            const Clock& clock, std::function<void()> on_experiment);

  Result<int64_t> create(const ScheduleSpec& spec);
  Status update(int64_t id, const ScheduleSpec& spec);
  Status remove(int64_t id);
  Result<nlohmann::json> get(int64_t id);  // with its last 20 firings
  Result<nlohmann::json> list();           // without them
  // A page of schedule `id`'s firings by due time ({"due_at", "fired_at", "outcome", "experiment_id", "detail"});
  // `page.after` and next_after are due times in milliseconds.
  Result<PageOf<nlohmann::json>> firings(int64_t id, const PageRequest& page);
  // The next `count` due times after now: [{"at": unix seconds, "local": "2026-11-22T02:00:00+03:00"}, ...].
  Result<nlohmann::json> next(int64_t id, int count);

  // Handles every schedule due at the clock's now. run() calls it; tests call it with a FakeClock.
  boost::asio::awaitable<void> tick();
  // Runs until stop(). Start once, after the run manager.
  boost::asio::awaitable<void> run();
  void stop();

 private:
  Result<nlohmann::json> brief(int64_t id);  // the schedule without its firings
  struct Row {
    int64_t id = 0;
    ScheduleSpec spec;
    std::optional<double> next_fire_at;
  };
  Result<Row> row(int64_t id);
  Result<std::vector<Row>> due(double now);
  Result<std::optional<double>> next_after(const ScheduleSpec& spec, double after);
  // Handles one due schedule: fires it, or records a skipped or failed firing, then moves it on.
  boost::asio::awaitable<void> fire(const Row& r, double now);
  Status record(const Row& r, double due, double now, std::string_view outcome, std::optional<int64_t> experiment,
                const std::string& detail);
  double seconds_to_next_due(double at_most);
  void wake();

  Db& db_;
  Store& store_;
  ProviderRegistry& providers_;
  Datasets& datasets_;
  const Clock& clock_;
  std::function<void()> on_experiment_;
  boost::asio::steady_timer timer_;
  bool stopping_ = false;
};

}  // namespace tsum::daemon
