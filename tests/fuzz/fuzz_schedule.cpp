// POST /v1/schedules bodies: JSON parsed as the route does, then parse_schedule (which checks the cron
// expression, the zone and the experiment), then the schedule's next firings.
#include "daemon/schedules/cron.h"
#include "daemon/schedules/schedule_spec.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto j = nlohmann::json::parse(tsum::fuzz::text(data, size), nullptr, false);
  if (j.is_discarded()) return 0;
  auto spec = tsum::daemon::parse_schedule(j);
  if (!spec.ok()) return 0;
  auto cron = tsum::daemon::CronSchedule::parse(spec->cron, spec->timezone);
  if (!cron.ok()) __builtin_trap();  // parse_schedule accepted it
  (void)cron->next_n(tsum::daemon::SysSeconds(std::chrono::seconds(1'800'000'000)), 3);
  return 0;
}
