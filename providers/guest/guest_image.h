// GuestImage: the stock root file system guest machines boot (guest_machine.h), from a tarball of it such as
// scripts/guest-rootfs.sh makes (Debian 12 minbase + curl + ca-certificates, and for the ssh flavour
// openssh-server). A machine's disk is a copy-on-write layer over the image's extracted root, or a full
// extraction of the tarball; either way the machine sees only what the tarball holds.
//
// open() extracts the tarball once, next to it, into <tarball>.root (device nodes under /dev are left out:
// machines get a /dev of their own), as root with numeric owners. <tarball>.root.stamp records the size and
// modification time of the tarball it came from; a tarball that changed is extracted again (do not change it
// while machines run from it). Concurrent callers, threads or processes, wait on the lock file
// <tarball>.root.lock (bounded: timeout past kLockDeadline); the first extracts into a temporary directory
// and renames it into place, so a reader never sees half a root. Nothing ever writes into the root after.
#pragma once

#include <chrono>
#include <string>

#include "common/result.h"

namespace tsum::providers::guest {

class GuestImage {
 public:
  static constexpr std::chrono::seconds kLockDeadline{300};

  // not_found when the tarball does not exist (naming scripts/guest-rootfs.sh, which makes it); internal
  // when tar fails; timeout when another extraction holds the lock too long.
  static Result<GuestImage> open(const std::string& tarball);

  const std::string& tarball() const { return tarball_; }
  // The extracted root (absolute path). Machines mount it read-only as their lower layer.
  const std::string& root() const { return root_; }

 private:
  GuestImage(std::string tarball, std::string root) : tarball_(std::move(tarball)), root_(std::move(root)) {}

  std::string tarball_;
  std::string root_;
};

}  // namespace tsum::providers::guest
