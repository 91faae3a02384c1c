// One daemon per database: `tsumd serve` holds an exclusive flock(2) on DB.lock, beside the database, for its
// whole life. The kernel lets it go when the process dies (kill -9 included), so a crashed daemon never blocks the
// next one, and a second daemon on the same database refuses to start, naming the process that holds it. Other
// commands on the database (token create, export) take no lock: SQLite's own locking covers their writes.
#pragma once

#include <string>
#include <utility>

#include "common/result.h"

namespace tsum::daemon {

class DbLock {
 public:
  // Takes DB.lock without waiting, and writes this process's id into it; unavailable, naming the holder's pid,
  // when another process has it.
  static Result<DbLock> acquire(const std::string& db_path);
  DbLock(DbLock&& o) noexcept : fd_(std::exchange(o.fd_, -1)), path_(std::move(o.path_)) {}
  DbLock& operator=(DbLock&&) = delete;
  DbLock(const DbLock&) = delete;
  ~DbLock();
  const std::string& path() const { return path_; }

 private:
  DbLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
};

}  // namespace tsum::daemon
