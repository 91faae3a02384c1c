// POST /v1/runs/{id}/events bodies: JSON parsed as the route does, then parse_agent_event.
#include <cmath>

#include "daemon/agent/agent_event.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto j = nlohmann::json::parse(tsum::fuzz::text(data, size), nullptr, false);
  if (j.is_discarded()) return 0;
  auto ev = tsum::daemon::parse_agent_event(j);
  if (ev.ok() && (!std::isfinite(ev->mono_s) || ev->mono_s < 0 || ev->node < 0)) __builtin_trap();
  return 0;
}
