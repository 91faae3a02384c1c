#include "daemon/store/db_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace tsum::daemon {

Result<DbLock> DbLock::acquire(const std::string& db_path) {
  const std::string path = db_path + ".lock";
  // O_CLOEXEC: a process the daemon starts (a local run) must not inherit the lock and hold it past the daemon.
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return make_error(Code::unavailable, "open " + path + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char pid[32] = {};
    const ssize_t n = ::pread(fd, pid, sizeof pid - 1, 0);
    ::close(fd);
    std::string holder = n > 0 ? std::string(pid, static_cast<size_t>(n)) : std::string();
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    if (err != EWOULDBLOCK) return make_error(Code::unavailable, "lock " + path + ": " + std::strerror(err));
    return make_error(Code::unavailable, "database " + db_path + " is in use by another tsumd" +
                                             (holder.empty() ? std::string() : " (pid " + holder + ")") +
                                             ", which holds " + path +
                                             ": one daemon per database; stop that one, or give this one its own "
                                             "--db");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    const int err = errno;
    ::close(fd);
    return make_error(Code::unavailable, "write " + path + ": " + std::strerror(err));
  }
  return DbLock(fd, path);
}

DbLock::~DbLock() {
  if (fd_ >= 0) ::close(fd_);  // the kernel releases the flock with its last descriptor
}

}  // namespace tsum::daemon
