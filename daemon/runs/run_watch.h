// RunWatch: wakes the coroutines that watch a run (the SSE stream of GET /v1/runs/{id}/stream) when the run
// changes. The Ledger stays the one door for state changes: it reports each committed change (status, phase
// mark, epoch sample) through its observer, and RunWatch only counts changes per run and wakes waiters. It
// holds no run state; a watcher re-reads the run after waking.
//
// A watcher avoids lost wakeups by reading version() before it reads the run, then waiting for a version
// other than the one it read:
//
//   for (;;) {
//     uint64_t seen = watch.version(id);
//     auto run = views.run(id);              // state at least as new as `seen`
//     ...send it...
//     auto wake = co_await watch.wait(id, seen, 15s);
//     if (wake == RunWatch::Wake::closed) break;
//   }
//
// Single-threaded: every call must run on the io_context thread that runs the waiters.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <map>

#include "common/lru.h"

namespace tsum::daemon {

class RunWatch {
 public:
  enum class Wake { changed, timeout, closed };

  explicit RunWatch(boost::asio::any_io_executor executor) : executor_(std::move(executor)) {}
  RunWatch(const RunWatch&) = delete;
  RunWatch& operator=(const RunWatch&) = delete;

  // run_id changed: give it a new version and wake its waiters.
  void notify(int64_t run_id);

  // The run's version: 0 until its first change in this process, then a new value after each change. Only the
  // kVersionsKept runs changed last keep theirs: an older one reads 0 again, so a waiter parked on it wakes once
  // (and reads the run again) rather than the map growing with every run the daemon ever ran (100 bytes a run).
  static constexpr size_t kVersionsKept = 4096;
  uint64_t version(int64_t run_id) const;

  // Waits until run_id's version differs from `seen` (changed), `timeout` passes (timeout) or close()
  // is called (closed). Returns at once when the version already differs or the watch is closed.
  boost::asio::awaitable<Wake> wait(int64_t run_id, uint64_t seen, std::chrono::milliseconds timeout);

  // Wakes every waiter with `closed`, now and from now on (daemon shutdown). Idempotent.
  void close();

  // Waiters currently parked, for tests.
  size_t waiting() const { return waiters_.size(); }

 private:
  boost::asio::any_io_executor executor_;
  uint64_t next_version_ = 0;
  mutable Lru<int64_t, uint64_t> versions_{kVersionsKept};
  std::multimap<int64_t, boost::asio::steady_timer*> waiters_;
  bool closed_ = false;
};

}  // namespace tsum::daemon
