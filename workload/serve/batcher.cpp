#include "workload/serve/batcher.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace tsum::workload {
namespace {

class FixedDelayEngine final : public Engine {
 public:
  FixedDelayEngine(ModelIo io, std::chrono::microseconds service) : io_(std::move(io)), service_(service) {}
  const ModelIo& io() const override { return io_; }
  Result<std::vector<float>> run(const float*, std::int64_t n) override {
    // Until an absolute time, so the sleep does not grow by the time this call took to get here.
    std::this_thread::sleep_until(std::chrono::steady_clock::now() + service_);
    return std::vector<float>(static_cast<std::size_t>(n * io_.classes), 0.0f);
  }

 private:
  ModelIo io_;
  std::chrono::microseconds service_;
};

}  // namespace

std::unique_ptr<Engine> make_fixed_delay_engine(ModelIo io, std::chrono::microseconds service) {
  return std::make_unique<FixedDelayEngine>(std::move(io), service);
}

Batcher::Batcher(std::vector<Engine*> engines, Config config)
    : engines_(std::move(engines)), config_(config), tasks_(engines_.size()) {
  for (std::size_t i = 0; i < engines_.size(); ++i) threads_.emplace_back([this, i] { loop(i); });
}

Batcher::~Batcher() { stop(); }

bool Batcher::submit(Floats images, std::int64_t n, Done done) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || queued_images_ + n > config_.max_queue) return false;
    queued_images_ += n;
    queue_.push_back(Job{std::move(images), n, Clock::now(), std::move(done)});
  }
  cv_.notify_one();
  return true;
}

std::optional<std::future<JobResult>> Batcher::submit(Floats images, std::int64_t n) {
  auto promise = std::make_shared<std::promise<JobResult>>();
  auto future = promise->get_future();
  if (!submit(std::move(images), n, [promise](JobResult r) { promise->set_value(std::move(r)); }))
    return std::nullopt;
  return future;
}

void Batcher::run_on_model_threads(const std::function<void(Engine&)>& task) {
  for (std::size_t i = 0; i < engines_.size(); ++i) {
    Engine& engine = *engines_[i];
    std::packaged_task<void()> packaged([&task, &engine] { task(engine); });
    auto done = packaged.get_future();
    {
      std::lock_guard lock(mu_);
      if (stopping_) throw std::runtime_error("the batcher is stopping");
      tasks_[i].push_back(std::move(packaged));
    }
    cv_.notify_all();
    done.get();
  }
}

void Batcher::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  std::deque<Job> left;
  {
    std::lock_guard lock(mu_);
    left.swap(queue_);
    queued_images_ = 0;
    for (auto& t : tasks_) t.clear();  // their callers get broken_promise
  }
  for (auto& job : left) {
    JobResult r;
    r.status = make_error(Code::unavailable, "the server is stopping");
    job.done(std::move(r));
  }
}

Batcher::Stats Batcher::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void Batcher::loop(std::size_t instance) {
  auto& tasks = tasks_[instance];
  for (;;) {
    std::vector<Job> jobs;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty() || !tasks.empty(); });
      if (stopping_) return;
      if (!tasks.empty()) {
        auto task = std::move(tasks.front());
        tasks.pop_front();
        lock.unlock();
        task();
        continue;
      }
      const auto deadline = queue_.front().arrived + config_.max_delay;
      while (!stopping_ && !queue_.empty() && queued_images_ < config_.max_batch && Clock::now() < deadline)
        cv_.wait_until(lock, deadline);
      if (stopping_) return;
      if (queue_.empty()) continue;  // another instance took what waited
      std::int64_t images = 0;
      while (!queue_.empty() && (jobs.empty() || images + queue_.front().n <= config_.max_batch)) {
        images += queue_.front().n;
        jobs.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      queued_images_ -= images;
      ++stats_.batches;
      stats_.images += images;
    }
    run_batch(*engines_[instance], jobs);
  }
}

void Batcher::run_batch(Engine& engine, std::vector<Job>& jobs) {
  const auto start = Clock::now();
  std::int64_t total = 0;
  for (const auto& j : jobs) total += j.n;
  const std::int64_t per_image = engine.io().image_floats();
  std::vector<float> merged;
  const float* input = jobs.front().images.data();
  if (jobs.size() > 1) {
    merged.resize(static_cast<std::size_t>(total * per_image));
    std::size_t at = 0;
    for (const auto& j : jobs) {
      std::memcpy(merged.data() + at, j.images.data(), j.images.size() * sizeof(float));
      at += j.images.size();
    }
    input = merged.data();
  }
  Result<std::vector<float>> logits = make_error(Code::internal, "not run");
  try {
    logits = engine.run(input, total);
  } catch (const std::exception& e) {
    logits = make_error(Code::internal, std::string("inference failed: ") + e.what());
  }
  const auto end = Clock::now();
  const std::int64_t classes = engine.io().classes;
  if (logits.ok() && logits->size() != static_cast<std::size_t>(total * classes))
    logits = make_error(Code::internal, "the model answered " + std::to_string(logits->size()) + " logits for " +
                                            std::to_string(total) + " images of " + std::to_string(classes) +
                                            " classes");
  std::int64_t at = 0;
  for (auto& j : jobs) {
    JobResult r;
    r.queue_s = std::chrono::duration<double>(start - j.arrived).count();
    r.compute_s = std::chrono::duration<double>(end - start).count();
    r.batch = total;
    if (!logits.ok()) {
      r.status = logits.error();
    } else {
      const auto* from = logits->data() + at * classes;
      r.logits.assign(from, from + j.n * classes);
    }
    at += j.n;
    j.done(std::move(r));
  }
}

}  // namespace tsum::workload
