#include "daemon/views/metrics.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "daemon/runs/run_status.h"

namespace tsum::daemon {

namespace {

const std::vector<double> kPhaseBounds = {0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 14400};
const std::vector<double> kCallBounds = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// A label value with \, " and newline escaped.
std::string esc(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void help(std::string& out, const char* name, const char* type, const char* text) {
  out += std::string("# HELP ") + name + " " + text + "\n# TYPE " + name + " " + type + "\n";
}

using Steady = std::chrono::steady_clock;
double since(Steady::time_point t0) { return std::chrono::duration<double>(Steady::now() - t0).count(); }

}  // namespace

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  if (i < bounds_.size()) ++counts_[i];
  ++count_;
  sum_ += v;
}

void Histogram::add(size_t bucket, uint64_t n, double sum) {
  if (bucket < bounds_.size()) counts_[bucket] += n;
  count_ += n;
  sum_ += sum;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& labels) const {
  std::string sep = labels.empty() ? "" : ",";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += name + "_bucket{" + labels + sep + "le=\"" + num(bounds_[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_bucket{" + labels + sep + "le=\"+Inf\"} " + std::to_string(count_) + "\n";
  std::string braces = labels.empty() ? "" : "{" + labels + "}";
  out += name + "_sum" + braces + " " + num(sum_) + "\n";
  out += name + "_count" + braces + " " + std::to_string(count_) + "\n";
}

void ProviderCallMetrics::record(std::string_view provider, std::string_view op, double seconds, bool ok) {
  auto key = std::make_pair(std::string(provider), std::string(op));
  latency_.try_emplace(key, kCallBounds).first->second.observe(seconds);
  if (!ok) ++errors_[key];
  else errors_.try_emplace(key, 0);
}

void ProviderCallMetrics::render(std::string& out) const {
  help(out, "tsum_provider_call_seconds", "histogram", "Latency of provider API calls since the daemon started.");
  for (const auto& [key, h] : latency_)
    h.render(out, "tsum_provider_call_seconds", "provider=\"" + esc(key.first) + "\",op=\"" + esc(key.second) + "\"");
  help(out, "tsum_provider_call_errors_total", "counter", "Provider API calls that returned an error.");
  for (const auto& [key, n] : errors_)
    out += "tsum_provider_call_errors_total{provider=\"" + esc(key.first) + "\",op=\"" + esc(key.second) + "\"} " +
           std::to_string(n) + "\n";
}

providers::Task<Result<std::vector<providers::Offer>>> MeteredProvider::offers(const providers::Requirements& req) {
  auto t0 = Steady::now();
  auto r = co_await inner_->offers(req);
  metrics_.record(name(), "offers", since(t0), r.ok());
  co_return r;
}

providers::Task<Result<providers::InstanceHandle>> MeteredProvider::create(const providers::Offer& offer,
                                                                           const providers::LaunchSpec& spec) {
  auto t0 = Steady::now();
  auto r = co_await inner_->create(offer, spec);
  metrics_.record(name(), "create", since(t0), r.ok());
  co_return r;
}

providers::Task<Result<providers::InstanceStatus>> MeteredProvider::describe(const providers::InstanceHandle& h) {
  auto t0 = Steady::now();
  auto r = co_await inner_->describe(h);
  metrics_.record(name(), "describe", since(t0), r.ok());
  co_return r;
}

providers::Task<std::vector<Result<providers::InstanceStatus>>> MeteredProvider::describe_many(
    const std::vector<providers::InstanceHandle>& handles) {
  auto t0 = Steady::now();
  auto r = co_await inner_->describe_many(handles);
  metrics_.record(name(), "describe_many", since(t0), std::all_of(r.begin(), r.end(), [](const auto& s) { return s.ok(); }));
  co_return r;
}

providers::Task<Status> MeteredProvider::terminate(const providers::InstanceHandle& h) {
  auto t0 = Steady::now();
  auto r = co_await inner_->terminate(h);
  metrics_.record(name(), "terminate", since(t0), r.ok());
  co_return r;
}

providers::Task<Result<std::vector<providers::InstanceHandle>>> MeteredProvider::list_tagged(std::string_view tag) {
  auto t0 = Steady::now();
  auto r = co_await inner_->list_tagged(tag);
  metrics_.record(name(), "list_tagged", since(t0), r.ok());
  co_return r;
}

providers::Task<Result<providers::MachineQuota>> MeteredProvider::machine_quota() {
  auto t0 = Steady::now();
  auto r = co_await inner_->machine_quota();
  if (r || r.code() != Code::not_found) metrics_.record(name(), "machine_quota", since(t0), r.ok());
  co_return r;
}

namespace {

// What instances cost under their providers' rules (daemon/schedules/budget.h), and the monthly budget.
Status render_billed(std::string& out, Budget& budget) {
  auto by_provider = budget.charge_by_provider();
  if (!by_provider) return by_provider.error();
  help(out, "tsum_billed_total", "counter",
       "What instances cost under their provider's billing rule, failed and unfinished runs included.");
  for (const auto& [key, v] : *by_provider)
    out += "tsum_billed_total{provider=\"" + esc(key.first) + "\",currency=\"" + esc(key.second) + "\"} " + num(v) +
           "\n";
  auto month = budget.month_charge();
  if (!month) return month.error();
  help(out, "tsum_month_billed", "gauge", "What instances started this calendar month (UTC) cost so far.");
  out += "tsum_month_billed " + num(*month) + "\n";
  if (budget.options().monthly) {
    help(out, "tsum_monthly_budget", "gauge", "The spend cap per calendar month (--monthly-budget).");
    out += "tsum_monthly_budget " + num(*budget.options().monthly) + "\n";
  }
  return {};
}

}  // namespace

Result<std::string> render_metrics(Db& db, Totals& totals, const ProviderCallMetrics& calls, Budget& budget,
                                   const WalCheckpointer* wal) {
  // Each figure reads the sums the database keeps (daemon/views/totals.h), a row per status, phase bucket, rule or
  // provider: a scrape costs the same after a million runs as after ten.
  if (auto s = totals.settle(); !s) return s.error();  // the runs just finished: a batch at most
  std::string out;
  std::map<std::string, int64_t> by_status;
  for (auto s : kStatusNames) by_status[std::string(s)] = 0;
  auto st = db.prepare("SELECT status, n FROM status_counts");
  if (!st) return st.error();
  for (;;) {
    auto row = st->step();
    if (!row) return row.error();
    if (!*row) break;
    by_status[st->text(0)] = st->int64(1);
  }
  help(out, "tsum_runs", "gauge", "Runs by status.");
  for (const auto& [s, n] : by_status) out += "tsum_runs{status=\"" + esc(s) + "\"} " + std::to_string(n) + "\n";
  help(out, "tsum_queue_depth", "gauge", "Runs waiting in the queue.");
  out += "tsum_queue_depth " + std::to_string(by_status["queued"]) + "\n";

  std::map<std::string, Histogram> phases;
  for (auto p : kPhaseNames) phases.try_emplace(std::string(p), kPhaseBounds);
  auto buckets = totals.phase_histogram();
  if (!buckets) return buckets.error();
  for (const auto& b : *buckets)
    if (auto it = phases.find(b.phase); it != phases.end() && b.bucket >= 0 && b.n > 0)
      it->second.add(static_cast<size_t>(b.bucket), static_cast<uint64_t>(b.n), b.sum);
  help(out, "tsum_phase_seconds", "histogram", "Measured durations of the phases of t_sum.");
  for (auto p : kPhaseNames)
    phases.at(std::string(p)).render(out, "tsum_phase_seconds", "phase=\"" + std::string(p) + "\"");

  calls.render(out);

  auto spend = totals.spend();
  if (!spend) return spend.error();
  help(out, "tsum_spend_total", "counter", "Billed cost of finished runs under each experiment's billing rules.");
  for (const auto& [key, v] : *spend)
    out += "tsum_spend_total{rule=\"" + esc(key.first) + "\",currency=\"" + esc(key.second) + "\"} " + num(v) + "\n";
  if (auto s = render_billed(out, budget); !s) return s.error();
  if (wal) {
    const auto st = wal->stats();
    help(out, "tsum_wal_checkpoints_total", "counter", "Checkpoints of SQLite's write-ahead log by its own thread.");
    out += "tsum_wal_checkpoints_total " + std::to_string(st.checkpoints) + "\n";
    help(out, "tsum_wal_checkpoint_failures_total", "counter", "Of those, the ones that failed (e.g. a full disk).");
    out += "tsum_wal_checkpoint_failures_total " + std::to_string(st.failures) + "\n";
  }
  return out;
}

}  // namespace tsum::daemon
