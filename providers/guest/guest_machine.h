// GuestMachine: a machine that shares nothing with this host but the network, for the fake clouds' instances
// (tests/fakes/guest), SSH test hosts and bring-your-own test machines. Needs root, util-linux (unshare,
// nsenter, setpriv, mount) and iproute2.
//
// Its disk is a fresh copy of a stock root (guest_image.h): an overlayfs whose upper layer is <dir>/upper
// over the image's root, mounted at <dir>/root (a few KiB per machine), or, where overlayfs does not work
// (DiskMode::copy, or automatic after a failed mount), the tarball extracted into <dir>/root. create() gives
// it its own /etc/hostname, /etc/hosts and /etc/resolv.conf (no name server: guests reach the daemon by
// address), a network namespace of its own with loopback up and eth0 (a veth pair whose other end is a port
// of the network's bridge) holding its leased address, default route via the bridge's address.
//
// start() runs a command as the machine's init: in that network namespace and new mount, PID, UTS and IPC
// namespaces, with the root pivoted to <dir>/root (this host's file system is unmounted from its view, not
// merely hidden by chroot), /proc of its own PID namespace (/proc/sys read-only), a /dev of its own (tmpfs with
// null, zero, full, random, urandom and tty bound from this host, a devpts instance, /dev/shm), /run a tmpfs,
// hostname = name, environment only PATH and HOME=/root, working directory /, stdin /dev/null, stdout and
// stderr appended to <dir>/console.log (a file the guest cannot see). Nothing of this host is bound into it.
// Its loopback is its own: this host's 127.0.0.1 is unreachable from it. It runs until halt(): its init
// (pid 1) staying up is what keeps the machine up; when init exits, the kernel kills the rest of it.
// The machine dies with the thread that started it (a parent-death signal), so a killed daemon leaves no
// process behind; what it leaves on disk and in the network (mount, namespace, veth, lease) is removed by
// sweep_stale, which every create() on the same network runs first.
//
// halt() kills everything in the machine, then removes its veth, network namespace, mount, <dir> and lease.
// Not thread-safe: one owner calls it (FakeGuest serialises its machines).
// Isolation is for honest tests, not a security boundary: the guest's root is this host's root with every
// capability (as on a VM, where root owns the machine); it must not be given untrusted code to run.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "providers/guest/guest_image.h"
#include "providers/guest/guest_network.h"

namespace tsum::providers::guest {

enum class DiskMode { automatic, overlay, copy };

struct GuestMachineOptions {
  std::string dir;   // on this host, absolute, letters digits / _ . - only; created (it must not exist)
  std::string name;  // the hostname: 1 to 63 of letters, digits, '.', '_', '-'
  DiskMode disk = DiskMode::automatic;
};

class GuestMachine {
 public:
  static constexpr std::chrono::seconds kStartDeadline{10};
  static constexpr std::chrono::seconds kHaltDeadline{5};

  // Makes the disk and joins the network (the image and network must outlive nothing: they are copied).
  // invalid_argument for bad options; already_exists when dir exists; unavailable when the network has no
  // free address; internal when a mount or ip command fails (what was made is removed again).
  static Result<std::unique_ptr<GuestMachine>> create(const GuestImage& image, const GuestNetwork& network,
                                                      GuestMachineOptions options);
  ~GuestMachine();
  GuestMachine(const GuestMachine&) = delete;
  GuestMachine& operator=(const GuestMachine&) = delete;

  // A file on the machine's disk (root_files.h: paths resolve inside the guest). Before start(), this is
  // what the machine boots with; after, the guest sees it at once. internal once halted.
  Status write_file(std::string_view guest_path, std::string_view content, unsigned mode = 0644);
  Result<std::string> read_file(std::string_view guest_path) const;

  // Starts argv (argv[0] a path inside the guest) as the machine's init; returns once the guest's namespaces
  // are set up and argv is about to run. invalid_argument when started before (even if that start failed:
  // make a new machine) or argv is empty; internal
  // (with the console's tail) when the namespaces cannot be made; timeout past kStartDeadline.
  Status start(const std::vector<std::string>& argv);
  // Whether init still runs (started, not halted, not exited).
  bool running();
  // Kills the machine and removes all it had (see above). Idempotent; the destructor calls it.
  void halt();

  const std::string& name() const { return name_; }
  const std::string& address() const { return lease_.address; }
  const std::string& netns() const { return lease_.netns; }
  const std::string& veth() const { return lease_.veth; }
  const std::string& dir() const { return dir_; }
  std::string console_path() const { return dir_ + "/console.log"; }
  // The machine's "/" on this host (<dir>/root), up until halt(). Symbolic links in it are the guest's: use
  // read_file/write_file to follow them safely.
  std::string root() const { return dir_ + "/root"; }
  DiskMode disk() const { return disk_; }  // overlay or copy: what create() made
  // Its init in this host's PID namespace; -1 before start() and after halt().
  pid_t init_pid() const { return init_; }

  // Removes what machines of processes that are gone left on this network (see above); how many.
  static int sweep_stale(const GuestNetwork& network);
  // Removes every machine on the network, whoever made it (for the one who removes the network); how many.
  static int remove_all(const GuestNetwork& network);

 private:
  GuestMachine(GuestNetwork network, AddressLease lease, std::string dir, std::string name);
  Status make_disk(const GuestImage& image, DiskMode mode);
  Status join_network();

  GuestNetwork network_;
  AddressLease lease_;
  std::string dir_, name_;
  DiskMode disk_ = DiskMode::copy;
  bool started_ = false;
  bool halted_ = false;
  pid_t unshare_ = -1;  // our child: unshare, the parent of init
  pid_t init_ = -1;
  int init_fd_ = -1;    // a pidfd of init
};

}  // namespace tsum::providers::guest
