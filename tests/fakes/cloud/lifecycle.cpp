#include "tests/fakes/cloud/lifecycle.h"

namespace tsum::providers::fake_cloud {

namespace {

// The phase `since` seconds in; "" past the last.
std::string phase_of(const std::vector<Phase>& phases, double since) {
  double end = 0;
  for (const auto& p : phases) {
    end += p.seconds;
    if (since < end) return p.state;
  }
  return {};
}

}  // namespace

std::string state_at(const Lifecycle& life, const Timeline& t, double now) {
  if (t.deleted_at_s && now >= *t.deleted_at_s) return phase_of(life.teardown, now - *t.deleted_at_s);
  if (t.halted_at_s && now >= *t.halted_at_s) return phase_of(life.halt, now - *t.halted_at_s);
  return phase_of(life.boot, now - t.created_at_s);
}

bool booted(const Timeline& t, double now) {
  return now >= t.created_at_s && !(t.deleted_at_s && now >= *t.deleted_at_s) && !(t.halted_at_s && now >= *t.halted_at_s);
}

}  // namespace tsum::providers::fake_cloud
