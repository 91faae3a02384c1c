// FakeGuest: the operating system of the fake clouds' instances. boot() starts a guest machine
// (providers/guest/guest_machine.h) for the instance: a fresh copy of the stock root (options.image) in
// namespaces of its own on the test network (options.network, a bridge), under options.root/<instance id>
// on this host, sharing nothing with the daemon but that network. Then it does there what cloud-init does
// with the instance's #cloud-config user data (cloud_config.h):
//   - write_files: each file goes to its own path inside the guest (no relocation), with its permissions;
//   - runcmd: the commands go, in order, into /var/lib/cloud/instance/scripts/runcmd inside the guest, which
//     runs as the guest's init (pid 1) with working directory /, PATH and HOME=/root only, stdin /dev/null,
//     stdout and stderr appended to options.root/<id>/console.log (outside the guest); after runcmd the init
//     stays (exec sleep infinity), so whatever the instance started (the agent: nohup setsid) lives until
//     halt(), which kills everything in the guest and removes its disk, network namespace, veth and directory;
//   - packages: each must be in the image (checked with dpkg, a line on the console when not: a fake guest
//     reaches no mirror); docker.io's engine is started as its service would be (providers/guest/docker_engine.h,
//     trusting options.insecure_registry);
//   - every other top-level key is skipped, named in a line on stderr;
//   - anything malformed is invalid_argument (parse_cloud_config).
// The guests also die when the thread that booted them ends (for the fakes, the server thread) or the
// process is killed; what a killed process left on the network is swept by the next boot on it.
// Every boot starts from a fresh copy of the stock root: nothing of an earlier boot of the id is kept.
// Needs root, util-linux and iproute2. Thread-safe; the destructor halts every guest.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "tests/fakes/guest/cloud_config.h"
#include "providers/guest/guest_image.h"
#include "providers/guest/guest_machine.h"
#include "providers/guest/guest_network.h"

namespace tsum::providers::fake_guest {

// An instance the cloud has up now, for FakeGuest::sync.
struct LiveInstance {
  std::string id;
  std::string user_data;
};

struct FakeGuestOptions {
  std::string root;     // guests' directories on this host: root/<instance id> (set: instances really boot)
  std::string image;    // the stock root tarball (scripts/guest-rootfs.sh OUT.tar)
  std::string network;  // the bridge guests join (guest_network.h); the daemon listens on its address
  std::string insecure_registry;  // a plain-HTTP registry (HOST:PORT) the guests' Docker engines trust
  // A shell command run on this host once a guest's network is up and before anything runs in it, with
  // TSUM_GUEST_ID and TSUM_GUEST_NETNS set (e.g. to shape its network: a delay); its failure fails the boot.
  std::string boot_hook;
};

class FakeGuest {
 public:
  explicit FakeGuest(FakeGuestOptions options);
  ~FakeGuest();
  FakeGuest(const FakeGuest&) = delete;
  FakeGuest& operator=(const FakeGuest&) = delete;

  // Boots the instance: a fresh machine, its files written, runcmd started. Idempotent per id: while the id
  // is booted (or its boot failed), another boot returns the first one's result and does nothing.
  // invalid_argument for a bad id (letters, digits, '.', '_', '-' only), bad options or bad user data;
  // not_found when the image is missing; the machine's errors otherwise (guest_machine.h).
  Status boot(const std::string& instance_id, std::string_view user_data);
  // Kills everything the instance started and removes the machine, waiting at most a few seconds. Idempotent.
  void halt(const std::string& instance_id);
  // Makes the guests follow the cloud: halts each booted id that is not in `up`, boots each one of `up` not
  // booted yet (a boot that fails is logged on stderr once).
  void sync(const std::vector<LiveInstance>& up);
  // Whether the instance's machine is still up (booted, not halted, its init alive).
  bool running(const std::string& instance_id);
  // The instance's network namespace and address while it is booted, for tests; empty otherwise.
  std::string netns(const std::string& instance_id);
  std::string address(const std::string& instance_id);
  // The booted instance whose machine has this address; empty for none.
  std::string instance_at(const std::string& address);
  const std::string& root() const { return opts_.root; }

 private:
  struct Guest {
    std::unique_ptr<guest::GuestMachine> machine;  // null when the boot failed
    Status booted = {};
  };

  Status start(const std::string& id, std::string_view user_data, Guest& g);
  Status open_image_and_network();

  FakeGuestOptions opts_;
  std::mutex mu_;
  std::optional<guest::GuestImage> image_;
  std::optional<guest::GuestNetwork> network_;
  std::map<std::string, Guest> guests_;
};

}  // namespace tsum::providers::fake_guest
