// Liveness of the ranks of a distributed run, kept in the run's c10d store (rank 0's TCPStore).
//
// Every rank bumps its counter "hb/<rank>" every kBeat from a thread of its own and reads the other
// ranks' counters, their "done/<rank>" marks and the run's "verdict" key. A rank whose counter has
// not moved for the timeout and that has not marked itself done has stopped answering (hung, dead,
// or cut off). The first rank to name a failure writes it as the verdict (compare-and-set: the first
// one stands); every rank that reads a verdict prints it and exits 1, so one failure ends the whole
// run within about the timeout, whatever each rank was blocked in. The store lives in rank 0: when
// the store refuses the connection, rank 0 has exited; when it stays silent for the timeout, rank 0
// stopped answering; either way no verdict can be written, each rank says so itself.
//
// A collective that fails (a peer's connection closed, or Gloo's own timeout) asks diagnose() which
// rank to blame: the verdict if there is one, else the rank whose heartbeat stopped first (waiting
// up to a few beats for it to go stale: a killed rank's connection closes before its beat is missed).
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tsum::workload {

class RankWatchdog {
 public:
  static constexpr std::chrono::milliseconds kBeat{250};

  // `store` is shared by every rank (keys are used as given: wrap it in a PrefixStore); `master`
  // names rank 0's store in messages.
  RankWatchdog(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size,
               std::chrono::milliseconds timeout, std::string master);
  ~RankWatchdog();  // stops the threads (no mark: call finish() first on a clean exit)
  RankWatchdog(const RankWatchdog&) = delete;
  RankWatchdog& operator=(const RankWatchdog&) = delete;

  // Beats once (so this rank counts as joined) and starts the beat and monitor threads.
  void start();

  // The message for a failed collective whose exception said `what`: names a rank when one can be
  // blamed ("rank 2 exited", "rank 1 stopped answering"), else passes `what` on. Blocks up to
  // a few seconds (bounded by the timeout).
  std::string diagnose(const std::string& what);

  // Ranks that have not beaten even once (never joined), for start-up errors.
  std::vector<int> missing_ranks();

  // Marks this rank done (so silence is no longer a failure) and stops the threads. Rank 0 then
  // waits, up to the timeout, for every rank's mark, so the store outlives the others' last use.
  void finish();

  // Ends the process: publishes `message` as the verdict unless one stands already, prints the
  // verdict on stderr, marks this rank done, keeps the store up a little for the others (rank 0),
  // and exits 1 without unwinding (other threads may be blocked in Gloo).
  [[noreturn]] void abort(const std::string& message);

 private:
  void beat_loop();
  void monitor_loop();
  bool beat_once();  // false when the store failed (rank 0 gone)
  std::string stale_rank_message(std::chrono::steady_clock::duration min_silence,
                                 bool exited) const;
  [[noreturn]] void exit_with(const std::string& message, bool store_usable);
  void linger();

  c10::intrusive_ptr<c10d::Store> store_;
  const int rank_;
  const int world_size_;
  const std::chrono::milliseconds timeout_;
  const std::string master_;

  mutable std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::vector<std::int64_t> beats_;  // last seen counter per rank
  std::vector<std::chrono::steady_clock::time_point> changed_;  // when each counter last moved
  std::vector<bool> done_;
  std::string verdict_;
  bool store_failed_ = false;
  std::string store_error_;
  std::atomic<std::int64_t> last_ok_ns_{0};  // steady clock of the last answered beat
  std::atomic<bool> exiting_{false};
  std::thread beat_thread_;
  std::thread monitor_thread_;
};

}  // namespace tsum::workload
