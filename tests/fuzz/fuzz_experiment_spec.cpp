// POST /v1/experiments bodies: parse_experiment_spec must answer every input with a spec or an error.
#include "daemon/experiments/experiment_spec.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto spec = tsum::daemon::parse_experiment_spec(tsum::fuzz::text(data, size));
  if (!spec.ok() && spec.error().detail.empty()) __builtin_trap();  // an error always says what is wrong
  return 0;
}
