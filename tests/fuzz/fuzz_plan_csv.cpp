// The planner's CSV of measured runs (tsumd plan --from-csv, tsum-plan): parse_runs_csv, then, for inputs of a
// few kilobytes, the whole offline plan built from it (predictor, billing rules, ranking).
#include "billing/plan_csv.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view csv = tsum::fuzz::text(data, size);
  auto runs = tsum::billing::parse_runs_csv(csv);
  if (runs.ok() && size <= 4096) (void)tsum::billing::plan_from_csv(csv, {}, {});
  return 0;
}
