// Guest machines for tests (providers/guest): a test network of its own per test (a bridge with a /24 of
// 10.213.0.0/16), the address the daemon should listen on there and its public URL, and guests of the stock
// roots that CTest's fixtures build in the build tree (guest_rootfs: TSUM_GUEST_IMAGE; guest_rootfs_ssh:
// TSUM_GUEST_SSH_IMAGE, with openssh-server), booted with any shell command.
// Needs root, iproute2 and util-linux; a missing precondition FAILs the test saying what to do.
#pragma once

#include <doctest/doctest.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "providers/guest/guest_image.h"
#include "providers/guest/guest_machine.h"
#include "providers/guest/guest_network.h"
#include "providers/guest/host_command.h"
#include "support/guest_probe.h"
#include "support/temp_dir.h"

namespace tsum::testing {

namespace guest = tsum::providers::guest;

#ifdef TSUM_GUEST_IMAGE
inline const char* kGuestImage = TSUM_GUEST_IMAGE;
#else
inline const char* kGuestImage = "build/cache/guest-bookworm.tar";
#endif
#ifdef TSUM_GUEST_SSH_IMAGE
inline const char* kGuestSshImage = TSUM_GUEST_SSH_IMAGE;
#else
inline const char* kGuestSshImage = "build/cache/guest-bookworm-ssh-docker.tar";
#endif
// The python3-torch flavour: a stock Debian 12 with Debian's PyTorch, for users' PyTorch-Python jobs.
#ifdef TSUM_GUEST_TORCH_IMAGE
inline const char* kGuestTorchImage = TSUM_GUEST_TORCH_IMAGE;
#else
inline const char* kGuestTorchImage = "build/cache/guest-bookworm-torch.tar";
#endif

// The image at `tarball`, opened (extracted) once per test process. FAILs when it is missing.
inline const guest::GuestImage& guest_image(const std::string& tarball = kGuestImage) {
  static std::mutex mu;
  static std::map<std::string, guest::GuestImage> opened;
  std::lock_guard lock(mu);
  if (auto it = opened.find(tarball); it != opened.end()) return it->second;
  if (geteuid() != 0) FAIL("guest machines need root (mounts, network namespaces); run the test as root");
  auto image = guest::GuestImage::open(tarball);
  if (!image)
    FAIL("guest image: " << image.error().detail << " (CTest's guest_rootfs fixtures run scripts/guest-rootfs.sh;"
                         << " it needs debootstrap from scripts/install-deps.sh and Debian's mirror)");
  return opened.emplace(tarball, std::move(*image)).first->second;
}

// A bridge of its own (named tb<pid><letter>) with 10.213.<n>.1/24 for n not used on this host, removed by
// the destructor together with every guest machine still on it. Bridges of test processes that are gone are
// swept first.
class TestNetwork {
 public:
  TestNetwork() : dir_("tsum-guests") {
    if (geteuid() != 0) FAIL("a test network needs root (a bridge, network namespaces); run the test as root");
    if (::access(guest::find_tool("ip").c_str(), X_OK) != 0) FAIL("`ip` is missing: install iproute2");
    std::filesystem::create_directories(guest::GuestNetwork::kLeaseDir);
    // One chooser at a time on this host, so two processes never take one subnet.
    const std::string lock_file = std::string(guest::GuestNetwork::kLeaseDir) + "/subnets.lock";
    int fd = ::open(lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(::flock(fd, LOCK_EX) == 0);  // held only while a chooser creates a bridge: short
    sweep_stale_bridges();
    static std::atomic<int> counter{0};
    bridge_ = "tb" + std::to_string(::getpid()) + static_cast<char>('a' + counter++ % 26);
    const int n = free_subnet();
    gateway_ = "10.213." + std::to_string(n) + ".1";
    auto made = guest::GuestNetwork::create_bridge(bridge_, gateway_ + "/24");
    ::close(fd);
    REQUIRE_MESSAGE(made.ok(), made.error().detail);
    auto net = guest::GuestNetwork::open(bridge_);
    REQUIRE_MESSAGE(net.ok(), net.error().detail);
    network_ = std::make_unique<guest::GuestNetwork>(std::move(*net));
  }
  ~TestNetwork() {
    if (network_) guest::GuestMachine::remove_all(*network_);
    guest::GuestNetwork::remove_bridge(bridge_);
  }
  TestNetwork(const TestNetwork&) = delete;
  TestNetwork& operator=(const TestNetwork&) = delete;

  const std::string& bridge() const { return bridge_; }
  const guest::GuestNetwork& network() const { return *network_; }
  // Where the daemon listens so that guests reach it: the bridge's address.
  const std::string& listen_address() const { return gateway_; }
  std::string url(int port) const { return "http://" + gateway_ + ":" + std::to_string(port); }
  // Every process of every machine that has been on this network since the list was made, halted ones
  // included (guest_probe.h: count_within, gone_within).
  ProcessList guests() const {
    auto seen = std::make_shared<std::set<std::string>>();
    return [this, seen] {
      for (const auto& l : network_->leases())
        if (auto id = netns_id(l.lease.netns); !id.empty()) seen->insert(id);
      return processes_in_net(*seen);
    };
  }
  // A directory for machines (removed with the network).
  std::string machine_dir(const std::string& name) const { return dir_.file(name); }

  // A machine of `image` named `name` (its directory under machine_dir), made but not started.
  std::unique_ptr<guest::GuestMachine> machine(const std::string& name, const std::string& image = kGuestImage,
                                               guest::DiskMode disk = guest::DiskMode::automatic) const {
    auto m = guest::GuestMachine::create(guest_image(image), *network_, {.dir = machine_dir(name), .name = name, .disk = disk});
    REQUIRE_MESSAGE(m.ok(), m.error().detail);
    return std::move(*m);
  }
  // A machine running `/bin/sh -c command` as its init, e.g. "curl -fsSL URL | sh" for a byo machine.
  std::unique_ptr<guest::GuestMachine> boot_shell(const std::string& name, const std::string& command,
                                                  const std::string& image = kGuestImage) const {
    auto m = machine(name, image);
    auto started = m->start({"/bin/sh", "-c", command});
    REQUIRE_MESSAGE(started.ok(), started.error().detail);
    return m;
  }

 private:
  // The lowest n whose 10.213.n.0/24 no interface of this host has an address in.
  static int free_subnet() {
    bool used[256] = {};
    ifaddrs* list = nullptr;
    REQUIRE(getifaddrs(&list) == 0);
    for (ifaddrs* i = list; i; i = i->ifa_next) {
      if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
      std::uint32_t ip = ntohl(reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr);
      if ((ip >> 16) == ((10u << 8) | 213u)) used[(ip >> 8) & 0xff] = true;
    }
    freeifaddrs(list);
    for (int n = 1; n < 255; ++n)
      if (!used[n]) return n;
    FAIL("every 10.213.n.0/24 is in use on this host");
    return 0;
  }

  // Bridges tb<pid><letter> whose process is gone (killed before its destructor ran): their machines, then
  // the bridge.
  static void sweep_stale_bridges() {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/sys/class/net", ec)) {
      const std::string name = e.path().filename().string();
      if (name.size() < 4 || !name.starts_with("tb") || name.back() < 'a' || name.back() > 'z') continue;
      const std::string pid = name.substr(2, name.size() - 3);
      if (pid.find_first_not_of("0123456789") != std::string::npos || pid.empty()) continue;
      if (std::filesystem::exists("/proc/" + pid, ec)) continue;
      if (auto net = guest::GuestNetwork::open(name)) guest::GuestMachine::sweep_stale(*net);
      guest::GuestNetwork::remove_bridge(name);
    }
  }

  TempDir dir_;
  std::string bridge_, gateway_;
  std::unique_ptr<guest::GuestNetwork> network_;
};

}  // namespace tsum::testing
