#include "providers/guest/guest_image.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "providers/guest/host_command.h"

namespace tsum::providers::guest {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
constexpr auto kExtractDeadline = std::chrono::minutes(5);

// A lock file held with flock while the object lives.
class FileLock {
 public:
  explicit FileLock(const std::string& path) : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {}
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  Status acquire(const std::string& what, std::chrono::seconds limit) {
    if (fd_ < 0) return make_error(Code::internal, "cannot open the lock file of " + what + ": " + strerror(errno));
    for (const auto deadline = Clock::now() + limit;;) {
      if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return {};
      if (errno != EWOULDBLOCK && errno != EINTR)
        return make_error(Code::internal, "cannot lock " + what + ": " + strerror(errno));
      if (Clock::now() >= deadline)
        return make_error(Code::timeout, "another process held the lock of " + what + " for " +
                                             std::to_string(limit.count()) + " s");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

 private:
  int fd_;
};

}  // namespace

Result<GuestImage> GuestImage::open(const std::string& tarball) {
  std::error_code ec;
  const std::string tar = fs::absolute(tarball, ec).lexically_normal().string();
  struct stat st{};
  if (ec || ::stat(tar.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
    return make_error(Code::not_found, "guest image " + tarball +
                                           " does not exist: make it with scripts/guest-rootfs.sh " + tarball);
  const std::string root = tar + ".root", stamp_file = root + ".stamp";
  const std::string stamp = std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
                            std::to_string(st.st_mtim.tv_nsec) + "\n";
  auto current = [&] { return read_text(stamp_file) == stamp && fs::is_directory(root + "/bin", ec); };
  if (current()) return GuestImage(tar, root);

  FileLock lock(root + ".lock");
  if (auto s = lock.acquire(root, kLockDeadline); !s) return s.error();
  if (current()) return GuestImage(tar, root);  // another process extracted it while we waited

  const std::string tmp = root + ".new";
  fs::remove_all(tmp, ec);
  fs::remove(stamp_file, ec);
  if (!fs::create_directory(tmp, ec) || ec)
    return make_error(Code::internal, "cannot create " + tmp + ": " + (ec ? ec.message() : "it exists"));
  auto untar = run_checked({"tar", "-x", "-f", tar, "-C", tmp, "--numeric-owner", "--exclude=./dev/*"}, kExtractDeadline);
  if (!untar) {
    fs::remove_all(tmp, ec);
    return untar.error();
  }
  if (fs::exists(root, ec)) {
    const std::string old = root + ".old";
    fs::remove_all(old, ec);
    fs::rename(root, old, ec);
    if (ec) return make_error(Code::internal, "cannot move the stale " + root + " away: " + ec.message());
    fs::remove_all(old, ec);
  }
  fs::rename(tmp, root, ec);
  if (ec) return make_error(Code::internal, "cannot rename " + tmp + " to " + root + ": " + ec.message());
  std::ofstream(stamp_file) << stamp;
  return GuestImage(tar, root);
}

}  // namespace tsum::providers::guest
