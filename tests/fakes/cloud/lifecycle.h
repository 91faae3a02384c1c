// Lifecycle: the fakes' shared model of an instance's life on the clock, pending -> running -> terminated, in
// each cloud's own state names. From its creation an instance passes through the boot phases (EC2: pending
// for pending_s, then running), from a delete through the teardown phases (shutting-down, then terminated for
// an hour) and is gone after the last, and from a guest power-off through the halt phases (stopping, then
// stopped). Each phase lasts its seconds after the one before; a phase of kForever lasts until the next
// event. A delete outranks a power-off. Pure functions of the times given; the caller keeps the times.
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace tsum::providers::fake_cloud {

inline constexpr double kForever = std::numeric_limits<double>::infinity();

struct Phase {
  std::string state;
  double seconds = kForever;
};

struct Lifecycle {
  std::vector<Phase> boot;      // from creation; its last phase is the running one (kForever)
  std::vector<Phase> teardown;  // from the delete; gone after the last
  std::vector<Phase> halt;      // from a guest power-off
};

// What happened to one instance, in seconds on the fake's clock.
struct Timeline {
  double created_at_s = 0;
  std::optional<double> deleted_at_s = {};
  std::optional<double> halted_at_s = {};
};

// The state at `now`; "" once the instance is gone (past the last teardown or halt phase).
std::string state_at(const Lifecycle& life, const Timeline& t, double now);

// Whether the instance is in one of its boot phases at `now`: its guest should be up.
bool booted(const Timeline& t, double now);

}  // namespace tsum::providers::fake_cloud
