// `tsum-train load`: a load generator for a server of the Open Inference Protocol (`tsum-train serve`, Triton,
// KServe), measured the way Triton's perf_analyzer measures.
//
// Levels. A concurrency sweep keeps N requests in flight (N connections, each sending its next request when its
// answer is in); a request-rate sweep sends requests at R per second, evenly spaced (constant) or as a Poisson
// process (exponential gaps, MLPerf's Server scenario), from a pool of connections; a request's latency then
// counts from the moment it was due, so a client that falls behind shows as latency, never as a lower rate.
// Each level is measured in windows of at least `window_s` and `window_requests` answers, repeated until three
// in a row agree: throughput and mean latency each within `stability` of the three's mean (stable = 1), or
// `max_trials` windows have passed (stable = 0). The first window opens after `warmup` answers (a server idle
// before the level has its thread pool asleep and its caches cold). A wait for answers, the warm-up's or a
// window's, ends after 10 x window_s anyway. The level's statistics come from the last three windows.
//
// What it sends comes from the model's metadata (GET /v2/models/{m}): seeded random tensors for each numeric input
// it names (BOOL, INT*, UINT*, FP32, FP64), of its shape with a leading -1 made --batch, or with --images the JPEGs
// as its BYTES input; it asks for every output. Tensors travel as binary (the binary tensor extension) only where
// GET /v2 lists binary_tensor_data, else as JSON. So it drives any server of the protocol, not only tsum's.
//
// First "load_ready": url, model, input ("fp32": generated tensors, or "jpeg"), inputs (their names), binary (1 or
// 0), batch, mode, arrivals, levels, window_s, warmup, stability, bound_ms,
// rtt_ms (the median round trip of GET /v2/health/live: the network alone).
// Per level (event "load_level", one JSON line, event_writer.h):
//   mode ("concurrency" or "rate"), concurrency, rate (the target; 0 in a concurrency sweep), requests (answered
//   200 in the three windows), errors, late (rate mode: sent over 1 ms after due, all connections busy),
//   throughput_rps, images_per_s, samples, p50_ms p90_ms p95_ms p99_ms (null unless the samples put at least
//   one answer above the percentile: 2, 10, 20 and 100 samples), mean_ms, stderr_ms (of the mean),
//   network_ms queue_ms compute_ms server_other_ms (means; compute_sd_ms the spread of compute: the client's latency split by the server's
//   X-Tsum-* headers; network is what the server did not see), batch_mean (images per server batch), stable,
//   trials, over_bound (p99 over --bound-ms, or too few samples to know it), client_cpu_{min,avg,max}_pct,
//   server_cpu_{min,avg,max}_pct, server_gpu_{min,avg,max}_pct (where the server has a GPU),
//   server_rss_max_bytes, server_mem_max_bytes, rtt_ms (load_ready's, so each level stands alone) (the
//   host figures are sampled every `sample_s`, default 1 s, from /proc/stat here and GET /v2/tsum/host there).
// A sweep stops after the first level whose p99 is over --bound-ms (where the bound is crossed); "load_end"
// then says which level that was (bound_crossed_at, 0 if none) and the highest level under it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "workload/train/event_writer.h"

namespace tsum::workload {

enum class Arrivals { constant, poisson };

struct LoadOptions {
  std::string url = "http://127.0.0.1:8000";
  std::string model = "resnet50";
  std::vector<std::int64_t> concurrency = {1, 2, 4, 8};
  std::vector<double> rates;  // requests/s; non-empty: a request-rate sweep instead
  Arrivals arrivals = Arrivals::poisson;
  std::int64_t batch = 1;           // images per request
  std::string images_dir;           // JPEGs sent as BYTES; empty: seeded random FP32 tensors
  double window_s = 2.0;
  std::int64_t window_requests = 50;
  double stability = 0.10;
  std::int64_t max_trials = 10;
  std::int64_t warmup = 0;          // answers per level before its first window, not measured
  double bound_ms = 0.0;            // 0: no bound
  std::int64_t max_inflight = 256;  // rate mode: connections
  double timeout_s = 60.0;          // per request
  double sample_s = 1.0;  // each sample wakes a thread on either side, beside the model: not too often
  std::uint64_t seed = 1;
  std::string latency_file;  // non-empty: every measured latency as CSV (latency_file.h)
  std::string stop_token;  // when done or failed: POST /v2/tsum/stop with it (a server run with --stop-token)
};

// Runs the sweep, then stops the server when options.stop_token is set. unavailable when the server cannot be reached or does not serve `model`; invalid_argument for
// images that do not fit the model; a level whose requests fail is reported (errors), not an error.
Status run_load(const LoadOptions& options, EventWriter& events);

// The statistics of one set of latencies (seconds), as the level event reports them: NaN where too few samples.
struct LatencyStats {
  std::int64_t samples = 0;
  double mean = 0, stderr_mean = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0;
};
LatencyStats latency_stats(std::vector<double> latencies);

// True when each of `values` is within `tolerance` (a fraction) of their mean.
bool within_tolerance(const std::vector<double>& values, double tolerance);

}  // namespace tsum::workload
