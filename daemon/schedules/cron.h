// Cron expressions for schedules: 5 fields (minute hour day-of-month month day-of-week) evaluated in an IANA
// time zone from the system's tzdata (through cctz).
//
// Syntax per field: `*`, `N`, `A-B`, `*/S`, `A-B/S`, `A/S` (A to the field's maximum), and comma lists of
// those. Months take jan..dec and days of the week sun..sat (0 and 7 are both Sunday). The macros @hourly,
// @daily (@midnight), @weekly, @monthly and @yearly (@annually) are accepted. As in Vixie cron, when both
// day-of-month and day-of-week are restricted, a day matches if either does.
//
// Daylight-saving transitions, decided once here so that every caller agrees:
//   - a local time skipped by a spring-forward gap fires at the transition instant (the first moment after
//     the gap), so a 02:30 job still runs once on that day;
//   - a local time that happens twice in a fall-back overlap fires only at its first occurrence.
#pragma once

#include <bitset>
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include <cctz/time_zone.h>

#include "common/result.h"

namespace tsum::daemon {

using SysSeconds = std::chrono::time_point<std::chrono::system_clock, std::chrono::seconds>;

class CronSchedule {
 public:
  // invalid_argument naming the field and the token for a bad expression; not_found for an unknown zone.
  static Result<CronSchedule> parse(std::string_view expr, const std::string& timezone = "UTC");

  // The first firing strictly after `after`. not_found if none within 8 years (e.g. "0 0 30 2 *").
  Result<SysSeconds> next(SysSeconds after) const;

  // The next `count` firings after `after`, in order.
  Result<std::vector<SysSeconds>> next_n(SysSeconds after, int count) const;

  const std::string& expression() const { return expr_; }
  const std::string& timezone() const { return tz_name_; }

 private:
  bool day_matches(int mday, int month, int wday) const;

  std::string expr_;
  std::string tz_name_;
  cctz::time_zone tz_;
  std::bitset<60> minutes_;
  std::bitset<24> hours_;
  std::bitset<32> mdays_;   // 1..31
  std::bitset<13> months_;  // 1..12
  std::bitset<7> wdays_;    // 0..6, Sunday = 0
  bool mday_any_ = true;
  bool wday_any_ = true;
};

}  // namespace tsum::daemon
