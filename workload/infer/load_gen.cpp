#include "workload/infer/load_gen.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "workload/machine/host_stats.h"
#include "workload/infer/http_client.h"
#include "workload/serve/infer_protocol.h"
#include "workload/infer/latency_file.h"
#include "workload/infer/load_requests.h"

namespace tsum::workload {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using Ms = std::chrono::milliseconds;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
const double kNaN = std::nan("");

struct Sample {
  Clock::time_point done;
  double latency = 0;  // seconds, from when the request was due
  double queue = 0, compute = 0, server = 0;
  std::int64_t batch = 0;
  bool ok = false;
  bool late = false;
};

// The items of `all` whose time (the member `when`) lies in (from, to].
template <typename T>
std::vector<T> in_span(const std::vector<T>& all, Clock::time_point T::*when, Clock::time_point from,
                       Clock::time_point to) {
  std::vector<T> out;
  for (const auto& x : all)
    if (x.*when > from && x.*when <= to) out.push_back(x);
  return out;
}

// Every answer of a level, by the time it came.
class Recorder {
 public:
  void add(const Sample& s) {
    {
      std::lock_guard lock(mu_);
      samples_.push_back(s);
    }
    added_.notify_all();
  }
  // Waits until `n` answers came after `t`, or until `deadline`. Woken by each answer, never by a clock: a waiter
  // that polled would wake beside the model on the machine it measures.
  void wait_for(Clock::time_point t, std::size_t n, Clock::time_point deadline) const {
    std::unique_lock lock(mu_);
    added_.wait_until(lock, deadline, [&] {
      return static_cast<std::size_t>(std::count_if(samples_.rbegin(), samples_.rend(), [&](const Sample& s) {
               return s.done > t;
             })) >= n;
    });
  }
  // The samples done in (from, to].
  std::vector<Sample> between(Clock::time_point from, Clock::time_point to) const {
    std::lock_guard lock(mu_);
    return in_span(samples_, &Sample::done, from, to);
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable added_;
  std::vector<Sample> samples_;
};

double header_us(const http::Response& m, std::string_view name) {
  const auto* h = m.header(name);
  return h ? std::strtod(h->c_str(), nullptr) / 1e6 : 0.0;
}

// One request and its answer on `conn`; the latency counts from `due`.
Sample send_one(http::Connection& conn, const http::Request& request, Clock::time_point due, double timeout_s) {
  auto answer = conn.round_trip(request, Ms(static_cast<std::int64_t>(timeout_s * 1000)));
  Sample s;
  s.done = Clock::now();
  s.latency = seconds(s.done - due);
  if (!answer.ok() || answer->status != 200) return s;
  s.ok = true;
  s.queue = header_us(*answer, "x-tsum-queue-us");
  s.compute = header_us(*answer, "x-tsum-compute-us");
  s.server = header_us(*answer, "x-tsum-server-us");
  const auto* b = answer->header("x-tsum-batch");
  s.batch = b ? std::strtoll(b->c_str(), nullptr, 10) : 0;
  return s;
}

// The host figures sampled while a level ran.
struct HostSample {
  Clock::time_point at;
  double client_cpu = kNaN, server_cpu = kNaN, server_gpu = kNaN;
  double server_rss = kNaN, server_mem = kNaN;
};

class HostSampler {
 public:
  HostSampler(const http::Url& url, double every_s) : url_(url), every_(every_s) {
    thread_ = std::thread([this] { loop(); });
  }
  ~HostSampler() {
    stop_ = true;
    thread_.join();
  }
  std::vector<HostSample> between(Clock::time_point from, Clock::time_point to) const {
    std::lock_guard lock(mu_);
    return in_span(samples_, &HostSample::at, from, to);
  }

 private:
  void loop() {
    http::Connection conn;
    CpuJiffies local0 = cpu_jiffies();
    std::optional<CpuJiffies> remote0;
    const auto request = http::make_request("GET", "/v2/tsum/host", url_.host);
    (void)conn.open(url_, Ms(5000));
    while (!stop_) {
      std::this_thread::sleep_for(std::chrono::duration<double>(every_));
      HostSample s;
      s.at = Clock::now();
      const CpuJiffies local1 = cpu_jiffies();
      s.client_cpu = busy_pct(local0, local1);
      local0 = local1;
      auto answer = conn.round_trip(request, Ms(5000));
      if (answer.ok() && answer->status == 200) {
        const json j = json::parse(answer->body, nullptr, false);
        if (j.is_object()) {
          const CpuJiffies remote1{j.value("cpu_busy_jiffies", std::int64_t{0}),
                                   j.value("cpu_total_jiffies", std::int64_t{0})};
          if (remote0) s.server_cpu = busy_pct(*remote0, remote1);
          remote0 = remote1;
          s.server_rss = j.value("rss_bytes", kNaN);
          s.server_mem = j.value("mem_used_bytes", kNaN);
          if (j.contains("gpu_util_pct")) s.server_gpu = j.value("gpu_util_pct", kNaN);
        }
      }
      std::lock_guard lock(mu_);
      samples_.push_back(s);
    }
  }

  http::Url url_;
  double every_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::vector<HostSample> samples_;
  std::thread thread_;
};

// Arrival times of a request-rate level: evenly spaced or a Poisson process, from `start`.
class Schedule {
 public:
  Schedule(Clock::time_point start, double rate, Arrivals arrivals, std::uint64_t seed)
      : next_(start), rate_(rate), arrivals_(arrivals), rng_(seed), gap_(rate) {}
  Clock::time_point next() {
    std::lock_guard lock(mu_);
    const auto due = next_;
    const double gap = arrivals_ == Arrivals::constant ? 1.0 / rate_ : gap_(rng_);
    next_ += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(gap));
    return due;
  }

 private:
  std::mutex mu_;
  Clock::time_point next_;
  double rate_;
  Arrivals arrivals_;
  std::mt19937_64 rng_;
  std::exponential_distribution<double> gap_;
};

struct Level {
  bool rate_mode = false;
  std::int64_t concurrency = 0;
  double rate = 0;
};

struct Window {
  Clock::time_point from, to;
  std::vector<Sample> samples;
  double throughput() const {
    const auto ok = std::count_if(samples.begin(), samples.end(), [](const Sample& s) { return s.ok; });
    return static_cast<double>(ok) / seconds(to - from);
  }
  double mean_latency() const {
    double sum = 0;
    std::int64_t n = 0;
    for (const auto& s : samples)
      if (s.ok) sum += s.latency, ++n;
    return n == 0 ? kNaN : sum / static_cast<double>(n);
  }
};

struct Measured {
  std::vector<Window> windows;  // the last three (or fewer)
  bool stable = false;
  std::int64_t trials = 0;
};

// Measures windows of the load the workers put on until three in a row agree or the trials run out.
Measured measure_windows(const LoadOptions& o, const Recorder& rec) {
  Measured m;
  std::vector<Window> all;
  const auto longest = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(10 * o.window_s));
  rec.wait_for(Clock::time_point{}, static_cast<std::size_t>(o.warmup), Clock::now() + longest);
  for (m.trials = 1; m.trials <= o.max_trials; ++m.trials) {
    Window w;
    w.from = Clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(o.window_s));
    rec.wait_for(w.from, static_cast<std::size_t>(o.window_requests), w.from + longest);
    w.to = Clock::now();
    w.samples = rec.between(w.from, w.to);
    all.push_back(std::move(w));
    if (all.size() < 3) continue;
    std::vector<double> rates, latencies;
    for (auto it = all.end() - 3; it != all.end(); ++it) {
      rates.push_back(it->throughput());
      latencies.push_back(it->mean_latency());
    }
    if (within_tolerance(rates, o.stability) && within_tolerance(latencies, o.stability)) {
      m.stable = true;
      break;
    }
  }
  m.trials = std::min(m.trials, o.max_trials);
  m.windows.assign(all.end() - std::min<std::ptrdiff_t>(3, static_cast<std::ptrdiff_t>(all.size())), all.end());
  return m;
}

// Runs one level's load and measures it.
Measured run_level(const LoadOptions& o, const Level& level, const http::Url& url,
                   const std::vector<http::Request>& requests) {
  Recorder rec;
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  const auto start = Clock::now();
  Schedule schedule(start, level.rate > 0 ? level.rate : 1.0, o.arrivals, o.seed);
  const std::int64_t threads = level.rate_mode ? o.max_inflight : level.concurrency;
  for (std::int64_t t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      // A concurrency level's connections are open before it starts; a rate level's pool opens one as its first
      // request comes (most of a large pool may never be needed).
      http::Connection conn;
      const Ms connect_within(static_cast<std::int64_t>(o.timeout_s * 1000));
      if (!level.rate_mode) (void)conn.open(url, connect_within);
      for (std::size_t i = static_cast<std::size_t>(t); !stop; i += static_cast<std::size_t>(threads)) {
        Clock::time_point due = Clock::now();
        bool late = false;
        if (level.rate_mode) {
          due = schedule.next();
          while (!stop && Clock::now() < due) std::this_thread::sleep_until(std::min(due, Clock::now() + Ms(100)));
          if (stop) break;
          late = Clock::now() - due > Ms(1);
        }
        if (!conn.is_open()) (void)conn.open(url, connect_within);
        Sample s = send_one(conn, requests[i % requests.size()], due, o.timeout_s);
        s.late = late;
        rec.add(s);
        if (!s.ok && !conn.is_open()) std::this_thread::sleep_for(Ms(10));  // not a busy loop on a dead server
      }
    });
  }
  Measured m = measure_windows(o, rec);
  stop = true;
  for (auto& w : workers) w.join();
  return m;
}

// The latencies of the level's answered requests, in the order they were measured.
std::vector<double> answered_latencies(const Measured& m) {
  std::vector<double> latencies;
  for (const auto& w : m.windows) {
    for (const auto& s : w.samples) {
      if (s.ok) latencies.push_back(s.latency);
    }
  }
  return latencies;
}

// The level's name in the latency file: "concurrency=2" or "rate=20".
std::string level_name(const Level& level) {
  char name[64];
  if (level.rate_mode) {
    std::snprintf(name, sizeof name, "rate=%g", level.rate);
  } else {
    std::snprintf(name, sizeof name, "concurrency=%lld", static_cast<long long>(level.concurrency));
  }
  return name;
}

// The per-level event's fields; `latencies` are answered_latencies(m).
std::vector<EventField> level_fields(const LoadOptions& o, const Level& level, const Measured& m,
                                     const std::vector<double>& latencies, const HostSampler& host) {
  double queue = 0, compute = 0, compute_sq = 0, server = 0, batch = 0, duration = 0;
  std::int64_t errors = 0, late = 0;
  for (const auto& w : m.windows) {
    duration += seconds(w.to - w.from);
    for (const auto& s : w.samples) {
      late += s.late;
      if (!s.ok) {
        ++errors;
        continue;
      }
      queue += s.queue, compute += s.compute, server += s.server, batch += static_cast<double>(s.batch);
      compute_sq += s.compute * s.compute;
    }
  }
  const auto n = static_cast<double>(latencies.size());
  const LatencyStats st = latency_stats(latencies);
  auto mean = [&](double sum) { return n == 0 ? kNaN : sum / n; };
  const double throughput = duration > 0 ? n / duration : 0.0;
  std::vector<EventField> f = {
      {"mode", std::string(level.rate_mode ? "rate" : "concurrency")},
      {"concurrency", level.concurrency},
      {"rate", level.rate},
      {"requests", static_cast<std::int64_t>(latencies.size())},
      {"errors", errors},
      {"late", late},
      {"throughput_rps", throughput},
      {"images_per_s", throughput * static_cast<double>(o.batch)},
      {"samples", st.samples},
      {"p50_ms", st.p50 * 1e3},
      {"p90_ms", st.p90 * 1e3},
      {"p95_ms", st.p95 * 1e3},
      {"p99_ms", st.p99 * 1e3},
      {"mean_ms", st.mean * 1e3},
      {"stderr_ms", st.stderr_mean * 1e3},
      {"network_ms", (st.mean - mean(server)) * 1e3},
      {"queue_ms", mean(queue) * 1e3},
      {"compute_ms", mean(compute) * 1e3},
      {"compute_sd_ms", std::sqrt(std::max(0.0, mean(compute_sq) - mean(compute) * mean(compute))) * 1e3},
      {"server_other_ms", mean(server - queue - compute) * 1e3},
      {"batch_mean", mean(batch)},
      {"stable", std::int64_t{m.stable}},
      {"trials", m.trials},
      {"over_bound", std::int64_t{o.bound_ms > 0 && !(st.p99 * 1e3 <= o.bound_ms)}},
  };
  const auto samples = m.windows.empty() ? std::vector<HostSample>{}
                                         : host.between(m.windows.front().from, m.windows.back().to);
  // min, avg and max of a host figure over the level's samples (NaN where the host did not say).
  auto add_range = [&](double HostSample::*field, std::string_view min_name, std::string_view avg_name,
                       std::string_view max_name) {
    double lo = kNaN, hi = kNaN, sum = 0;
    std::int64_t k = 0;
    for (const auto& s : samples) {
      const double v = s.*field;
      if (std::isnan(v)) continue;
      lo = std::isnan(lo) ? v : std::min(lo, v);
      hi = std::isnan(hi) ? v : std::max(hi, v);
      sum += v, ++k;
    }
    if (!min_name.empty()) f.emplace_back(min_name, lo);
    if (!avg_name.empty()) f.emplace_back(avg_name, k == 0 ? kNaN : sum / static_cast<double>(k));
    f.emplace_back(max_name, hi);
  };
  add_range(&HostSample::client_cpu, "client_cpu_min_pct", "client_cpu_avg_pct", "client_cpu_max_pct");
  add_range(&HostSample::server_cpu, "server_cpu_min_pct", "server_cpu_avg_pct", "server_cpu_max_pct");
  add_range(&HostSample::server_gpu, "server_gpu_min_pct", "server_gpu_avg_pct", "server_gpu_max_pct");
  add_range(&HostSample::server_rss, "", "", "server_rss_max_bytes");
  add_range(&HostSample::server_mem, "", "", "server_mem_max_bytes");
  return f;
}

}  // namespace

LatencyStats latency_stats(std::vector<double> v) {
  LatencyStats s;
  s.samples = static_cast<std::int64_t>(v.size());
  s.mean = s.stderr_mean = s.p50 = s.p90 = s.p95 = s.p99 = kNaN;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  const auto n = static_cast<double>(v.size());
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / n;
  if (v.size() > 1) {
    double ss = 0;
    for (const double x : v) ss += (x - s.mean) * (x - s.mean);
    s.stderr_mean = std::sqrt(ss / (n - 1) / n);
  }
  // Nearest rank; a percentile only where at least one sample lies above it.
  auto pct = [&](double p) {
    if (n * (1 - p / 100) < 1 - 1e-9) return kNaN;
    const auto rank = static_cast<std::size_t>(std::ceil(p / 100 * n));
    return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
  };
  s.p50 = pct(50), s.p90 = pct(90), s.p95 = pct(95), s.p99 = pct(99);
  return s;
}

bool within_tolerance(const std::vector<double>& values, double tolerance) {
  if (values.empty()) return false;
  const double mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  if (!(mean > 0)) return false;
  return std::all_of(values.begin(), values.end(),
                     [&](double v) { return std::isfinite(v) && std::fabs(v - mean) <= tolerance * mean; });
}

namespace {

// The whole sweep (run_load, which then stops the server if asked).
Status run_sweep(const LoadOptions& o, EventWriter& events) {
  const auto begin = Clock::now();
  auto url = http::parse_url(o.url);
  if (!url.ok()) return url.error();
  auto latency_file = LatencyFile::create(o.latency_file);
  if (!latency_file.ok()) return latency_file.error();
  http::Connection conn;
  if (auto st = conn.open(*url, Ms(static_cast<std::int64_t>(o.timeout_s * 1000))); !st.ok()) return st;
  auto spec = model_spec(conn, *url, o.model);
  if (!spec.ok()) return spec.error();
  auto requests = make_requests(o, *url, *spec);
  if (!requests.ok()) return requests.error();
  // One request first: a bad image or a model that refuses the batch is an error, not a level of errors.
  auto first = conn.round_trip(requests->front(), Ms(static_cast<std::int64_t>(o.timeout_s * 1000)));
  if (!first.ok()) return make_error(Code::unavailable, "the first request failed: " + first.error().detail);
  if (first->status != 200) {
    const json j = json::parse(first->body, nullptr, false);
    return make_error(first->status < 500 ? Code::invalid_argument : Code::unavailable,
                      "the server refused the first request (" + std::to_string(first->status) + "): " +
                          (j.is_object() ? j.value("error", first->body) : first->body));
  }
  // The network's round trip alone: the median of small requests the server answers at once.
  std::vector<double> rtts;
  const auto live = http::make_request("GET", "/v2/health/live", url->host);
  for (int i = 0; i < 31; ++i) {
    const auto t0 = Clock::now();
    if (auto a = conn.round_trip(live, Ms(10'000)); a.ok()) rtts.push_back(seconds(Clock::now() - t0));
  }
  conn.close();
  std::sort(rtts.begin(), rtts.end());
  const double rtt_ms = rtts.empty() ? kNaN : rtts[rtts.size() / 2] * 1e3;
  std::string input_names;  // what each request carries, by the names the model's metadata gave
  for (const auto& t : spec->inputs) {
    if ((t.datatype == "BYTES") != !o.images_dir.empty()) continue;
    input_names += (input_names.empty() ? "" : ",") + t.name;
  }
  const bool rate_mode = !o.rates.empty();
  std::vector<Level> levels;
  if (rate_mode) {
    for (const double r : o.rates) levels.push_back({true, 0, r});
  } else {
    for (const auto c : o.concurrency) levels.push_back({false, c, 0});
  }
  events.emit("load_ready", {{"url", o.url},
                             {"model", o.model},
                             {"input", std::string(o.images_dir.empty() ? "fp32" : "jpeg")},
                             {"inputs", input_names},
                             {"binary", std::int64_t{spec->binary}},
                             {"batch", o.batch},
                             {"mode", std::string(rate_mode ? "rate" : "concurrency")},
                             {"arrivals", std::string(o.arrivals == Arrivals::poisson ? "poisson" : "constant")},
                             {"levels", static_cast<std::int64_t>(levels.size())},
                             {"window_s", o.window_s},
                             {"warmup", o.warmup},
                             {"stability", o.stability},
                             {"bound_ms", o.bound_ms},
                             {"rtt_ms", rtt_ms}});
  HostSampler host(*url, o.sample_s);
  std::int64_t crossed_at = 0;
  double best = 0;
  std::int64_t index = 0;
  for (const auto& level : levels) {
    ++index;
    const Measured m = run_level(o, level, *url, *requests);
    const std::vector<double> latencies = answered_latencies(m);
    if (auto st = latency_file->add(level_name(level), latencies); !st.ok()) return st;
    auto fields = level_fields(o, level, m, latencies, host);
    fields.emplace_back("rtt_ms", rtt_ms);  // each level carries the network's round trip: a curve stands alone
    events.emit("load_level", fields);
    const auto over = std::find_if(fields.begin(), fields.end(), [](const EventField& f) { return f.first == "over_bound"; });
    const auto rps = std::find_if(fields.begin(), fields.end(), [](const EventField& f) { return f.first == "throughput_rps"; });
    if (std::get<std::int64_t>(over->second) != 0) {
      crossed_at = index;
      break;
    }
    best = std::max(best, std::get<double>(rps->second));
  }
  events.emit("load_end", {{"seconds", seconds(Clock::now() - begin)},
                           {"bound_crossed_at", crossed_at},
                           {"best_throughput_rps", best}});
  return {};
}

// POST /v2/tsum/stop with the token: a server run for one client's sweep ends with it. Best effort: a server that
// is gone already is fine.
void stop_server(const LoadOptions& o) {
  auto url = http::parse_url(o.url);
  if (!url.ok()) return;
  http::Connection conn;
  if (!conn.open(*url, Ms(10'000)).ok()) return;
  (void)conn.round_trip(http::make_request("POST", "/v2/tsum/stop", url->host, "application/json", "{}",
                                           {{"X-Tsum-Stop-Token", o.stop_token}}),
                        Ms(10'000));
}

}  // namespace

Status run_load(const LoadOptions& o, EventWriter& events) {
  const Status st = run_sweep(o, events);
  if (!o.stop_token.empty()) stop_server(o);
  return st;
}

}  // namespace tsum::workload
