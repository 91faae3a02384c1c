// The write-ahead log copied into the database by a thread of its own.
//
// SQLite's automatic checkpoint runs inside the COMMIT that takes the log past 1000 pages and copies all of them:
// under a thousand agents' events, a few milliseconds on the event loop every few hundred events, most of the
// events' p99 (perf, bench/rest.sh). A WalCheckpointer runs a PASSIVE checkpoint every `every` from its own
// connection: it copies what no reader still needs, and never waits for, or blocks, the writer. The writer starts
// the log over when it begins while the whole log is copied; when it never pauses that long, its own automatic
// checkpoint still fires at 1000 pages (and restarts the log), but finds at most one tick's pages left to copy.
// (Turning the writer's automatic checkpoint off instead was tried: under writes that never pause the log then
// grew past 10,000 pages, the thread's checkpoints never finding it all copied as a write began.)
//
// Threads: start() on any thread; stats() from any thread. A checkpoint that fails (a full disk) is counted and
// retried at the next tick.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/result.h"

struct sqlite3;

namespace tsum::daemon {

class WalCheckpointer {
 public:
  static constexpr std::chrono::milliseconds kDefaultEvery{50};

  struct Stats {
    int64_t checkpoints = 0;  // that ran
    int64_t pages_left = 0;   // in the log and not yet in the database after the last one (a reader needed them)
    int64_t failures = 0;     // and why the last one failed
    std::string last_error;
  };

  // Opens a connection of its own to the WAL database at `path` and starts the thread. unavailable when the file
  // cannot be opened.
  static Result<std::unique_ptr<WalCheckpointer>> start(const std::string& path,
                                                        std::chrono::milliseconds every = kDefaultEvery);
  // Stops the thread (at once, not at the next tick) and closes its connection.
  ~WalCheckpointer();
  WalCheckpointer(const WalCheckpointer&) = delete;
  WalCheckpointer& operator=(const WalCheckpointer&) = delete;

  Stats stats() const;

 private:
  WalCheckpointer(sqlite3* db, std::chrono::milliseconds every);
  void loop();

  sqlite3* db_;
  std::chrono::milliseconds every_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  Stats stats_;
  std::thread thread_;
};

}  // namespace tsum::daemon
