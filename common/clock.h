// Time sources. The daemon measures startup and poweroff on its own clock; tests use FakeClock,
// which advances only when the test says so.
#pragma once

#include <atomic>
#include <chrono>

namespace tsum {

class Clock {
 public:
  virtual ~Clock() = default;
  // Seconds since the Unix epoch. Wall time, so it stays meaningful across daemon restarts.
  virtual double now_s() const = 0;
};

class SystemClock final : public Clock {
 public:
  double now_s() const override {
    using namespace std::chrono;
    return duration<double>(system_clock::now().time_since_epoch()).count();
  }
};

class FakeClock final : public Clock {
 public:
  explicit FakeClock(double start_s = 1'700'000'000.0) : now_(start_s) {}
  double now_s() const override { return now_.load(); }
  void advance(double s) { now_.store(now_.load() + s); }
  void set(double s) { now_.store(s); }

 private:
  std::atomic<double> now_;
};

}  // namespace tsum
