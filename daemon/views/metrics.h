// GET /metrics in the Prometheus text format (version 0.0.4):
//   tsum_runs{status}                         runs by status (gauge)
//   tsum_queue_depth                          queued runs (gauge)
//   tsum_phase_seconds{phase}                 histogram of measured phase durations
//   tsum_provider_call_seconds{provider,op}   histogram of provider API call latency (since start)
//   tsum_provider_call_errors_total{provider,op}
//   tsum_spend_total{rule,currency}           billed cost of finished runs under each experiment's rules
//   tsum_billed_total{provider,currency}      what instances cost under their provider's rule, unfinished and
//                                             failed runs included (daemon/schedules/budget.h prices them)
//   tsum_month_billed                         the same over this calendar month (UTC), the monthly budget's base
//   tsum_monthly_budget                       the --monthly-budget cap, when set
//   tsum_wal_checkpoints_total, tsum_wal_checkpoint_failures_total
//                                             the WAL checkpointer thread's (daemon/store/wal_checkpointer.h), when given
// Run, phase and spend figures come from the sums SQLite keeps as runs change (daemon/views/totals.h), so a scrape reads
// a row per series, not per run, and they survive restarts; provider call figures are
// counted in memory by MeteredProvider and start from zero with the daemon.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <string>

#include "daemon/schedules/budget.h"
#include "daemon/store/db.h"
#include "daemon/views/totals.h"
#include "daemon/store/wal_checkpointer.h"
#include "providers/provider.h"

namespace tsum::daemon {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size(), 0) {}
  void observe(double v);
  // Adds n observations to bucket `bucket` (0 .. bounds; bounds.size() is +Inf) whose values sum to `sum`.
  void add(size_t bucket, uint64_t n, double sum);
  // Appends the _bucket, _sum and _count lines of `name` with `labels` (e.g. `phase="learn"`, may be empty).
  void render(std::string& out, const std::string& name, const std::string& labels) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative
  uint64_t count_ = 0;
  double sum_ = 0;
};

class ProviderCallMetrics {
 public:
  void record(std::string_view provider, std::string_view op, double seconds, bool ok);
  void render(std::string& out) const;

 private:
  std::map<std::pair<std::string, std::string>, Histogram> latency_;
  std::map<std::pair<std::string, std::string>, uint64_t> errors_;
};

// A provider whose every call is timed into `metrics`. Owns the provider it wraps.
class MeteredProvider final : public providers::Provider {
 public:
  MeteredProvider(std::unique_ptr<providers::Provider> inner, ProviderCallMetrics& metrics)
      : inner_(std::move(inner)), metrics_(metrics) {}
  std::string_view name() const override { return inner_->name(); }
  providers::Capabilities capabilities() const override { return inner_->capabilities(); }
  providers::Task<Result<std::vector<providers::Offer>>> offers(const providers::Requirements& req) override;
  providers::Task<Result<providers::InstanceHandle>> create(const providers::Offer& offer,
                                                            const providers::LaunchSpec& spec) override;
  providers::Task<Result<providers::InstanceStatus>> describe(const providers::InstanceHandle& h) override;
  providers::Task<std::vector<Result<providers::InstanceStatus>>> describe_many(
      const std::vector<providers::InstanceHandle>& handles) override;
  providers::Task<Status> terminate(const providers::InstanceHandle& h) override;
  providers::Task<Result<std::vector<providers::InstanceHandle>>> list_tagged(std::string_view tag) override;
  providers::Task<Result<providers::MachineQuota>> machine_quota() override;

 private:
  std::unique_ptr<providers::Provider> inner_;
  ProviderCallMetrics& metrics_;
};

// The whole /metrics body.
Result<std::string> render_metrics(Db& db, Totals& totals, const ProviderCallMetrics& calls, Budget& budget,
                                   const WalCheckpointer* wal = nullptr);

}  // namespace tsum::daemon
