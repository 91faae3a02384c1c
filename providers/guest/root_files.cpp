#include "providers/guest/root_files.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace tsum::providers::guest {

namespace {

// A descriptor closed when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// openat2 relative to dirfd, resolving everything inside it; -1 with errno set on failure.
int open_in(int dirfd, const std::string& rel, int flags, mode_t mode) {
  open_how how{};
  how.flags = static_cast<std::uint64_t>(flags | O_CLOEXEC);
  how.mode = (flags & O_CREAT) ? mode : 0;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  return static_cast<int>(::syscall(SYS_openat2, dirfd, rel.c_str(), &how, sizeof how));
}

Error failed(const std::string& what, std::string_view path, int err) {
  return make_error(err == ENOENT ? Code::not_found : Code::internal,
                    "cannot " + what + " " + std::string(path) + " in the guest: " + strerror(err));
}

std::vector<std::string> components(std::string_view p) {
  std::vector<std::string> out;
  for (std::size_t at = 1; at <= p.size();) {
    std::size_t slash = p.find('/', at);
    if (slash == std::string_view::npos) slash = p.size();
    if (slash > at) out.emplace_back(p.substr(at, slash - at));
    at = slash + 1;
  }
  return out;
}

}  // namespace

bool valid_guest_path(std::string_view p) {
  if (!p.starts_with('/') || p.size() < 2 || p.ends_with('/') || p.find('\0') != std::string_view::npos) return false;
  for (const auto& c : components(p))
    if (c == "." || c == "..") return false;
  return true;
}

Status write_in_root(const std::string& root, std::string_view guest_path, std::string_view content, unsigned mode) {
  if (!valid_guest_path(guest_path))
    return make_error(Code::invalid_argument, "guest path '" + std::string(guest_path) + "' must be absolute, without . or ..");
  Fd root_fd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (root_fd.get() < 0) return failed("open the root for", guest_path, errno);
  const auto parts = components(guest_path);
  std::string prefix;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    const std::string parent = prefix.empty() ? "/" : prefix;
    prefix += "/" + parts[i];
    Fd dir(open_in(root_fd.get(), prefix, O_PATH | O_DIRECTORY, 0));
    if (dir.get() >= 0) continue;
    if (errno != ENOENT) return failed("open directory", prefix, errno);
    Fd up(open_in(root_fd.get(), parent, O_PATH | O_DIRECTORY, 0));
    if (up.get() < 0) return failed("open directory", parent, errno);
    if (::mkdirat(up.get(), parts[i].c_str(), 0755) != 0 && errno != EEXIST) return failed("create directory", prefix, errno);
  }
  Fd file(open_in(root_fd.get(), std::string(guest_path), O_WRONLY | O_CREAT | O_TRUNC, mode & 07777));
  if (file.get() < 0) return failed("create", guest_path, errno);
  for (std::size_t at = 0; at < content.size();) {
    ssize_t n = ::write(file.get(), content.data() + at, content.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return failed("write", guest_path, errno);
    at += static_cast<std::size_t>(n);
  }
  if (::fchmod(file.get(), mode & 07777) != 0) return failed("chmod", guest_path, errno);
  return {};
}

Result<std::string> read_in_root(const std::string& root, std::string_view guest_path) {
  if (!valid_guest_path(guest_path))
    return make_error(Code::invalid_argument, "guest path '" + std::string(guest_path) + "' must be absolute, without . or ..");
  Fd root_fd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (root_fd.get() < 0) return failed("open the root for", guest_path, errno);
  Fd file(open_in(root_fd.get(), std::string(guest_path), O_RDONLY, 0));
  if (file.get() < 0) return failed("open", guest_path, errno);
  std::string out;
  for (char buf[8192];;) {
    ssize_t n = ::read(file.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return failed("read", guest_path, errno);
    if (n == 0) return out;
    out.append(buf, static_cast<std::size_t>(n));
  }
}

}  // namespace tsum::providers::guest
