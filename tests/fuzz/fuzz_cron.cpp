// Cron expressions and zones: "ZONE\nEXPR" (no newline: the whole input is the expression, in UTC).
// Each accepted schedule's firings must come in strictly increasing order.
#include "daemon/schedules/cron.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in = tsum::fuzz::text(data, size);
  std::string zone = "UTC";
  if (auto nl = in.find('\n'); nl != std::string_view::npos) {
    zone = std::string(in.substr(0, nl));
    in.remove_prefix(nl + 1);
  }
  auto cron = tsum::daemon::CronSchedule::parse(in, zone);
  if (!cron.ok()) return 0;
  const tsum::daemon::SysSeconds from(std::chrono::seconds(1'700'000'000));
  auto times = cron->next_n(from, 4);
  if (!times.ok()) return 0;
  auto last = from;
  for (auto t : *times) {
    if (t <= last) __builtin_trap();
    last = t;
  }
  return 0;
}
