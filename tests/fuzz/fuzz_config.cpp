// The daemon's config file (tsumd.json): parse_config with its cloud, Slurm and billing-rule sections.
#include "daemon/config.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)tsum::daemon::parse_config(tsum::fuzz::text(data, size), "/nonexistent-tsum-fuzz");
  return 0;
}
