#include "tests/fakes/cloud/guest_hook.h"

namespace tsum::providers::fake_cloud {

GuestHook::GuestHook(const GuestOptions& opts) {
  if (!opts.root.empty()) guest_.emplace(opts);
}

std::string GuestHook::instance_at(const std::string& address) {
  return guest_ && !address.empty() ? guest_->instance_at(address) : std::string();
}

void GuestHook::sync(const std::vector<fake_guest::LiveInstance>& up) {
  if (guest_) guest_->sync(up);
}

}  // namespace tsum::providers::fake_cloud
