// Server-side dynamic batching for `tsum-train serve` (serve.h), after Triton's dynamic batcher: requests wait in
// one queue; a model thread takes the oldest, waits up to `max_delay` from its arrival for more to join it
// (not at all once `max_batch` images wait), runs the model once on all of them and hands each request its
// outputs with its own queue time (arrival to the batch's start) and the batch's compute time. With max_batch 1
// and no delay it is one server answering in arrival order: the M/D/1 queue of a model with a fixed service
// time. Several instances of the model (Triton's instance groups) each have a thread of their own, taking batches
// from the one queue: M/D/c. No libtorch here: the model is an Engine (serve_engines.cpp has the libtorch ones).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "workload/serve/large_alloc.h"

namespace tsum::workload {

// What a served model reads and answers: images of channels x height x width, logits over `classes`.
struct ModelIo {
  std::string name;      // served as /v2/models/{name}
  std::string platform;  // "pytorch_libtorch", "pytorch_torchscript", "fixed_delay"
  std::int64_t channels = 3;
  std::int64_t height = 224;
  std::int64_t width = 224;
  std::int64_t classes = 1000;
  std::int64_t params = 0;
  std::string device = "cpu";

  std::int64_t image_floats() const { return channels * height * width; }
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual const ModelIo& io() const = 0;
  // Logits (n x classes floats) for `n` images laid out channels-last (n x height x width x channels floats,
  // normalized). Called from one thread at a time.
  virtual Result<std::vector<float>> run(const float* images, std::int64_t n) = 0;
};

// A model that takes exactly `service` per batch, whatever its size, and answers zero logits: a server whose
// service time is known, to check the load generator and the batcher against queueing theory.
std::unique_ptr<Engine> make_fixed_delay_engine(ModelIo io, std::chrono::microseconds service);

struct JobResult {
  Status status;
  std::vector<float> logits;  // n x classes
  double queue_s = 0.0;       // arrival to the start of its batch
  double compute_s = 0.0;     // its batch's run
  std::int64_t batch = 0;     // images in its batch
};

class Batcher {
 public:
  struct Config {
    std::int64_t max_batch = 8;              // images per model run
    std::chrono::microseconds max_delay{0};  // the longest the oldest request waits for others to join it
    std::int64_t max_queue = 1024;           // images waiting; past it submit refuses (the server's 503)
  };

  // One thread per engine, each engine run by its thread only. `engines` is not empty; they read the same io().
  Batcher(std::vector<Engine*> engines, Config config);
  Batcher(Engine& engine, Config config) : Batcher(std::vector<Engine*>{&engine}, config) {}
  ~Batcher();  // stop()
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // Queues `n` images (n x io().image_floats() floats, channels-last); `done` is called on the batcher's thread
  // once their batch ran (or with unavailable when the batcher stops first). False, and `done` never called, when
  // max_queue images wait already or the batcher is stopping. n must be 1..max_batch.
  using Done = std::function<void(JobResult)>;
  bool submit(Floats images, std::int64_t n, Done done);
  // The same with a future; nullopt where submit refuses.
  std::optional<std::future<JobResult>> submit(Floats images, std::int64_t n);

  // Runs `task` with each engine on that engine's thread, between batches, one thread after another, and returns
  // once all ran (rethrowing the first throw): a warm-up there makes the per-thread state the requests then use
  // (OpenMP gives each calling thread a pool of its own), instead of a second pool on another thread.
  void run_on_model_threads(const std::function<void(Engine&)>& task);
  std::size_t instances() const { return engines_.size(); }

  // Finishes the batch in progress; what still waits is answered unavailable.
  void stop();

  struct Stats {
    std::int64_t batches = 0;
    std::int64_t images = 0;
  };
  Stats stats() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Job {
    Floats images;
    std::int64_t n = 0;
    Clock::time_point arrived;
    Done done;
  };

  void loop(std::size_t instance);
  void run_batch(Engine& engine, std::vector<Job>& jobs);

  std::vector<Engine*> engines_;
  Config config_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  std::vector<std::deque<std::packaged_task<void()>>> tasks_;  // per instance: run_on_model_threads', first
  std::int64_t queued_images_ = 0;
  bool stopping_ = false;
  Stats stats_;
  std::vector<std::thread> threads_;
};

}  // namespace tsum::workload
