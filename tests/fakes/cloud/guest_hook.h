// GuestHook: where a fake's instances meet tests/fakes/guest. With a guest root, after every request the
// fake's guests follow its instances (FakeGuest::sync): the user data of each instance that is booting or
// running is booted in a guest machine under root/<guest id>, and the guest of each one that is not is halted; destroying the
// hook halts them all. Without one, instances are records only. Each fake says which instances are up and
// under which id (FakeCloudApi::live_guests); everything about running them is here.
#pragma once

#include <optional>
#include <vector>

#include "tests/fakes/guest/fake_guest.h"

namespace tsum::providers::fake_cloud {

// root set: instances' user data boots in guest machines of `image` on the bridge `network` (fake_guest.h).
using GuestOptions = fake_guest::FakeGuestOptions;

class GuestHook {
 public:
  explicit GuestHook(const GuestOptions& opts);
  bool enabled() const { return guest_.has_value(); }
  // Boots what is up and not booted yet, halts what is booted and no longer up.
  void sync(const std::vector<fake_guest::LiveInstance>& up);
  // The instance whose guest has this address; "" for none (or without guests).
  std::string instance_at(const std::string& address);

 private:
  std::optional<fake_guest::FakeGuest> guest_;
};

}  // namespace tsum::providers::fake_cloud
