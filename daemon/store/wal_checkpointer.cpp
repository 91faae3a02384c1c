#include "daemon/store/wal_checkpointer.h"

#include <sqlite3.h>

namespace tsum::daemon {

Result<std::unique_ptr<WalCheckpointer>> WalCheckpointer::start(const std::string& path,
                                                                std::chrono::milliseconds every) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
  // A connection opens the log only once it reads; until then a checkpoint does nothing and says log -1.
  if (rc == SQLITE_OK) rc = sqlite3_exec(raw, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = raw ? sqlite3_errmsg(raw) : "out of memory";
    sqlite3_close(raw);
    return make_error(Code::unavailable, "checkpointer: database " + path + ": " + msg);
  }
  return std::unique_ptr<WalCheckpointer>(new WalCheckpointer(raw, every));
}

WalCheckpointer::WalCheckpointer(sqlite3* db, std::chrono::milliseconds every)
    : db_(db), every_(every), thread_([this] { loop(); }) {}

WalCheckpointer::~WalCheckpointer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  sqlite3_close_v2(db_);
}

void WalCheckpointer::loop() {
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, every_, [this] { return stopping_; })) {
    lock.unlock();
    int log = 0, copied = 0;  // frames in the log, and of them copied into the database (this call or before)
    const int rc = sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, &log, &copied);
    const std::string why = rc != SQLITE_OK ? sqlite3_errmsg(db_) : log < 0 ? "the database is not in WAL mode" : "";
    lock.lock();
    // BUSY: another connection (the writer's automatic checkpoint) is copying the log right now; nothing failed,
    // and the next round copies what is left.
    if (rc == SQLITE_BUSY) continue;
    if (why.empty()) {
      stats_.checkpoints += 1;
      stats_.pages_left = log - copied;
    } else {
      stats_.failures += 1;
      stats_.last_error = why;
    }
  }
}

WalCheckpointer::Stats WalCheckpointer::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace tsum::daemon
