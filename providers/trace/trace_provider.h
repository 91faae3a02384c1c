// The trace provider: replays recorded phase times (a `tsumd plan --from-csv` CSV) through the normal daemon
// path, so the ledger, the events and the billing all run for real on recorded machines.
//
// Offers: one per CSV config, priced with the config's price_per_hour; its instance_type is the CSV's
// instance_type, and every offer carries the same billing rule (TraceOptions::billing, in Offer::billing_rule
// and Offer::note).
// An "instance" is a stand-in agent: a coroutine on the daemon's executor that posts the begin and end marks
// the real agent posts (install … save) to TSUM_URL/v1/runs/TSUM_RUN_ID/events with the run's token.
// Repetitions of a config cycle through its recorded rows, in CSV order. The instance handle's data names the
// row (config, line) and its machine (cores, gpus), so a trace run in the database says what it replayed.
//
// Time compression. The recorded durations are reproduced exactly in the agent's mono_s timestamps (each
// phase's end - begin is the CSV value), so the ledger and the bill show the recorded in-instance phases.
// Only the wall-clock waiting is divided by `speed`. startup and poweroff are different: the daemon measures
// them on its own clock (create → first event, terminate → gone), and a provider cannot forge that clock; the
// stand-in waits startup/speed before its first event and terminate waits poweroff/speed, so those two
// phases show the compressed wall time (plus the daemon's reaction time). At speed 1 they match the CSV.
//
// Deadlines. A run's deadline (LaunchSpec::deadline_s) is kept on the recorded clock: the stand-in stops when the
// recorded seconds since its create (startup, then install … save) reach it, and its instance exits past its
// deadline (InstanceStatus::past_deadline), so a run stopped at its deadline stops at the same recorded second at
// any speed. On the daemon's clock, a deadline would let a replay at speed N run N times past it.
//
// A CSV row of N nodes (its `nodes` column) is one instance standing for the whole cluster, as its price and its
// recorded times are: its offer has the vCPUs, GPUs and memory of all N machines.
//
// Instances live in this process: after a daemon restart they are gone, and describe() says so.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "billing/plan_csv.h"
#include "providers/http/http_client.h"
#include "providers/provider.h"

namespace tsum::providers {

struct TraceOptions {
  std::vector<billing::CsvRun> runs;             // parse_runs_csv of the trace; at least one
  double speed = 1;                              // wall seconds = recorded seconds / speed; > 0
  std::string billing = "per_second_60s_min";    // rule spec named on every offer
};

class TraceProvider final : public Provider {
 public:
  // invalid_argument for no runs, a speed <= 0, an unknown billing rule, or two configs with one instance_type.
  static Result<std::unique_ptr<TraceProvider>> create(boost::asio::any_io_executor ex, TraceOptions opts);
  ~TraceProvider() override;

  std::string_view name() const override { return "trace"; }
  Capabilities capabilities() const override {
    return {.gpus = true, .spot = false, .docker = true, .native = true, .reaches_daemon = true};
  }
  Task<Result<std::vector<Offer>>> offers(const Requirements& req) override;
  Task<Result<InstanceHandle>> create(const Offer& offer, const LaunchSpec& spec) override;
  Task<Result<InstanceStatus>> describe(const InstanceHandle& h) override;
  Task<Status> terminate(const InstanceHandle& h) override;
  Task<Result<std::vector<InstanceHandle>>> list_tagged(std::string_view tag) override;

  const std::string& billing() const { return opts_.billing; }

 private:
  struct Instance;
  TraceProvider(boost::asio::any_io_executor ex, TraceOptions opts);
  Task<void> play(std::shared_ptr<Instance> inst);
  Task<Status> post_mark(Instance& inst, std::string_view phase, std::string_view mark, double mono_s);
  Task<bool> wait(Instance& inst, double recorded_s);
  Task<bool> run_for(Instance& inst, double recorded_s, std::string_view phase);
  const billing::CsvRun* next_row(const std::string& instance_type);

  boost::asio::any_io_executor ex_;
  TraceOptions opts_;
  std::map<std::string, std::vector<const billing::CsvRun*>> rows_by_type_;
  std::map<std::string, size_t> played_;  // creates per instance_type, for cycling through its rows
  std::map<std::string, std::shared_ptr<Instance>> instances_;
  http::HttpClient http_;
};

}  // namespace tsum::providers
