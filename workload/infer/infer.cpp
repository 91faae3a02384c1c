#include "workload/infer/infer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "workload/serve/bounded_queue.h"
#include "workload/machine/cpus.h"
#include "workload/infer/image_files.h"
#include "workload/infer/latency_file.h"
#include "workload/models/model_registry.h"

namespace tsum::workload {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct Batch {
  torch::Tensor images;  // [B, C, H, W], channels-last, on the host
  Clock::time_point load_start;
};

// Everything a batch size's measurement reads.
struct Bench {
  const InferOptions& options;
  Model& model;
  InputShape shape;
  std::vector<std::string> files;
  torch::Tensor decoded;  // --source memory: [N, C, H, W] decoded once
};

torch::Tensor empty_batch(const InputShape& shape, std::int64_t b) {
  return torch::empty({b, shape.channels, shape.height, shape.width},
                      torch::TensorOptions().dtype(torch::kFloat).memory_format(
                          torch::MemoryFormat::ChannelsLast));
}

// Batch number `seq` of size `b`: images seq*b .. seq*b+b-1 of the set, cycling.
Result<Batch> load_batch(const Bench& bench, std::int64_t seq, std::int64_t b) {
  Batch batch{empty_batch(bench.shape, b), Clock::now()};
  if (bench.decoded.defined()) {
    const torch::Tensor index =
        torch::arange(seq * b, seq * b + b, torch::kInt64).remainder_(bench.decoded.size(0));
    torch::index_select_out(batch.images, bench.decoded, 0, index);
    return batch;
  }
  const auto n = static_cast<std::int64_t>(bench.files.size());
  const std::int64_t per_image = bench.shape.channels * bench.shape.height * bench.shape.width;
  float* out = batch.images.data_ptr<float>();
  for (std::int64_t i = 0; i < b; ++i) {
    const auto& file = bench.files[static_cast<std::size_t>((seq * b + i) % n)];
    if (auto st = decode_into(file, bench.shape, out + i * per_image); !st.ok()) return st.error();
  }
  return batch;
}

// Runs a batch through the model and brings its predictions to the host; returns when they are
// there, so the clock covers device work too.
void compute(const Bench& bench, const torch::Tensor& images) {
  c10::InferenceMode inference;
  AutocastScope autocast(bench.options.placement);
  const torch::Tensor logits = bench.model.forward(images.to(bench.options.placement.device));
  (void)logits.argmax(1).to(torch::kCPU);
}

// Peak RSS tracking: the kernel's high-water mark (VmHWM), reset by writing 5 to clear_refs.
bool reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  return static_cast<bool>(out.flush());
}

std::int64_t peak_rss_bytes() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "VmHWM:") {
      std::int64_t kib = 0;
      in >> kib;
      return kib * 1024;
    }
    in.ignore(1 << 12, '\n');
  }
  return 0;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

struct Measured {
  std::vector<double> latencies;  // seconds, measured batches only
  double seconds = 0.0;           // wall time of the measured batches
};

Result<Measured> run_sync(const Bench& bench, std::int64_t b) {
  Measured m;
  const std::int64_t total = bench.options.warmup + bench.options.iterations;
  Clock::time_point start;
  for (std::int64_t seq = 0; seq < total; ++seq) {
    if (seq == bench.options.warmup) start = Clock::now();
    auto batch = load_batch(bench, seq, b);
    if (!batch.ok()) return batch.error();
    compute(bench, batch->images);
    if (seq >= bench.options.warmup) {
      m.latencies.push_back(seconds_between(batch->load_start, Clock::now()));
    }
  }
  m.seconds = seconds_between(start, Clock::now());
  return m;
}

Result<Measured> run_async(const Bench& bench, std::int64_t b, int loaders, std::int64_t capacity) {
  const std::int64_t total = bench.options.warmup + bench.options.iterations;
  BoundedQueue<Batch> queue(static_cast<std::size_t>(capacity));
  std::atomic<std::int64_t> next{0};
  std::atomic<int> running{loaders};
  std::mutex error_mutex;
  std::optional<Error> error;
  auto load = [&] {
    for (std::int64_t seq; (seq = next.fetch_add(1)) < total;) {
      auto batch = load_batch(bench, seq, b);
      if (!batch.ok()) {
        std::lock_guard lock(error_mutex);
        if (!error) error = batch.error();
        queue.close();
        break;
      }
      if (!queue.push(std::move(*batch))) break;
    }
    if (running.fetch_sub(1) == 1) queue.close();  // the last loader out closes the queue
  };
  std::vector<std::jthread> threads;
  for (int i = 0; i < loaders; ++i) threads.emplace_back(load);

  Measured m;
  Clock::time_point start;
  std::int64_t done = 0;
  try {
    while (auto batch = queue.pop()) {
      if (done == bench.options.warmup) start = Clock::now();
      compute(bench, batch->images);
      if (done >= bench.options.warmup) {
        m.latencies.push_back(seconds_between(batch->load_start, Clock::now()));
      }
      ++done;
    }
  } catch (...) {
    queue.close();  // unblock the loaders before the jthreads join
    throw;
  }
  m.seconds = seconds_between(start, Clock::now());
  threads.clear();
  if (error) return *error;
  return m;
}

Status measure(const Bench& bench, std::int64_t b, int loaders, std::int64_t capacity,
               LatencyFile& latency_file, EventWriter& events) {
  const bool reset = reset_peak_rss();
  auto m = bench.options.mode == InferMode::sync ? run_sync(bench, b)
                                                 : run_async(bench, b, loaders, capacity);
  if (!m.ok()) return m.error();
  if (auto st = latency_file.add("batch=" + std::to_string(b), m->latencies); !st.ok()) return st;
  const std::int64_t images = b * bench.options.iterations;
  events.emit("infer", {{"batch", b},
                        {"iterations", bench.options.iterations},
                        {"images", images},
                        {"seconds", m->seconds},
                        {"images_per_s", static_cast<double>(images) / m->seconds},
                        {"p50_ms", percentile(m->latencies, 50) * 1e3},
                        {"p99_ms", percentile(m->latencies, 99) * 1e3},
                        {"peak_rss_bytes", peak_rss_bytes()},
                        {"peak_rss_reset", reset}});
  return {};
}

// --source memory: decodes up to the largest batch's worth of files once.
Result<torch::Tensor> decode_all(const Bench& bench) {
  const std::int64_t largest = *std::max_element(bench.options.batches.begin(),
                                                 bench.options.batches.end());
  const auto n = std::min<std::int64_t>(largest, static_cast<std::int64_t>(bench.files.size()));
  Bench files_only{bench.options, bench.model, bench.shape, bench.files, {}};
  auto batch = load_batch(files_only, 0, n);
  if (!batch.ok()) return batch.error();
  return batch->images;
}

}  // namespace

Status run_infer(const InferOptions& options, EventWriter& events) {
  const auto begin = Clock::now();
  if (auto st = check_placement(options.placement); !st.ok()) return st;
  auto latency_file = LatencyFile::create(options.latency_file);
  if (!latency_file.ok()) return latency_file.error();
  const int threads = options.threads > 0 ? options.threads : usable_cpu_count();
  torch::set_num_threads(threads);
  torch::manual_seed(options.seed);
  auto model = make_model(options.model, {options.classes, options.image_size, 0});
  if (!model.ok()) return model.error();
  const InputShape shape = (*model)->input_shape();
  if (shape.kind != InputKind::image || (shape.channels != 1 && shape.channels != 3)) {
    return make_error(Code::invalid_argument,
                      "infer: model " + options.model + " does not read RGB or grey images");
  }
  auto files = list_images(options.images_dir);
  if (!files.ok()) return files.error();
  (*model)->eval();
  try {
    (*model)->to(options.placement.device);
  } catch (const std::exception& e) {
    return make_error(Code::unavailable, std::string("cannot move the model: ") + e.what());
  }
  (*model)->fold_for_inference();
  const int loaders = options.loaders > 0 ? options.loaders : std::min(4, usable_cpu_count());
  const std::int64_t capacity = options.queue > 0 ? options.queue : 2 * loaders;
  Bench bench{options, **model, shape, std::move(*files), {}};
  if (options.source == InferSource::memory) {
    auto decoded = decode_all(bench);
    if (!decoded.ok()) return decoded.error();
    bench.decoded = std::move(*decoded);
  }
  const bool async = options.mode == InferMode::async;
  events.emit("ready", {{"model", options.model},
                        {"params", (*model)->parameter_count()},
                        {"threads", std::int64_t{torch::get_num_threads()}},
                        {"device", device_name(options.placement.device)},
                        {"precision", std::string(precision_name(options.placement.precision))},
                        {"mode", std::string(async ? "async" : "sync")},
                        {"source", std::string(bench.decoded.defined() ? "memory" : "files")},
                        {"images", static_cast<std::int64_t>(bench.files.size())},
                        {"loaders", async ? loaders : 0},
                        {"queue", async ? capacity : 0}});
  try {
    for (const std::int64_t b : options.batches) {
      if (auto st = measure(bench, b, loaders, capacity, *latency_file, events); !st.ok()) return st;
    }
  } catch (const std::exception& e) {
    return make_error(Code::internal, std::string("inference failed: ") + e.what());
  }
  events.emit("infer_end", {{"seconds", seconds_between(begin, Clock::now())}});
  return {};
}

}  // namespace tsum::workload
