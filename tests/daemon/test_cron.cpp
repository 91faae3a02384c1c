#include <doctest/doctest.h>

#include <ctime>

#include "daemon/schedules/cron.h"

using namespace tsum;
using namespace tsum::daemon;

namespace {

// "2026-03-08T07:00:00Z" → seconds since the epoch.
SysSeconds utc(const char* iso) {
  std::tm tm{};
  REQUIRE(strptime(iso, "%Y-%m-%dT%H:%M:%SZ", &tm) != nullptr);
  return SysSeconds(std::chrono::seconds(timegm(&tm)));
}

std::string iso(SysSeconds t) {
  std::time_t s = t.time_since_epoch().count();
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::vector<std::string> fires(const char* expr, const char* tz, const char* after, int n) {
  auto c = CronSchedule::parse(expr, tz);
  REQUIRE_MESSAGE(c.ok(), c.error().detail);
  auto ts = c->next_n(utc(after), n);
  REQUIRE_MESSAGE(ts.ok(), ts.error().detail);
  std::vector<std::string> out;
  for (auto t : *ts) out.push_back(iso(t));
  return out;
}

}  // namespace

TEST_CASE("fields: values, ranges, steps, lists and names") {
  CHECK(fires("*/15 * * * *", "UTC", "2026-01-01T00:00:00Z", 3) ==
        std::vector<std::string>{"2026-01-01T00:15:00Z", "2026-01-01T00:30:00Z", "2026-01-01T00:45:00Z"});
  CHECK(fires("0 9-17/4 * * mon-fri", "UTC", "2026-11-20T12:00:00Z", 4) ==  // Friday 20 Nov 2026
        std::vector<std::string>{"2026-11-20T13:00:00Z", "2026-11-20T17:00:00Z", "2026-11-23T09:00:00Z",
                                 "2026-11-23T13:00:00Z"});
  CHECK(fires("5,10 0 1 jan,JUL *", "UTC", "2026-06-15T00:00:00Z", 3) ==
        std::vector<std::string>{"2026-07-01T00:05:00Z", "2026-07-01T00:10:00Z", "2027-01-01T00:05:00Z"});
  CHECK(fires("30/10 0 * * *", "UTC", "2026-01-01T00:00:00Z", 4) ==  // A/S runs from A to the maximum
        std::vector<std::string>{"2026-01-01T00:30:00Z", "2026-01-01T00:40:00Z", "2026-01-01T00:50:00Z",
                                 "2026-01-02T00:30:00Z"});
  CHECK(fires("@daily", "UTC", "2026-01-01T00:00:00Z", 1) == std::vector<std::string>{"2026-01-02T00:00:00Z"});
  CHECK(fires("0 0 * * 7", "UTC", "2026-11-21T00:00:00Z", 1) ==  // 7 is Sunday too
        std::vector<std::string>{"2026-11-22T00:00:00Z"});
  CHECK(fires("0 0 29 2 *", "UTC", "2026-01-01T00:00:00Z", 1) == std::vector<std::string>{"2028-02-29T00:00:00Z"});
}

TEST_CASE("day-of-month and day-of-week both restricted: either matches, as in Vixie cron") {
  // The 13th, and every Friday, of November 2026 (Fridays: 6, 13, 20, 27).
  CHECK(fires("0 12 13 * fri", "UTC", "2026-11-01T00:00:00Z", 4) ==
        std::vector<std::string>{"2026-11-06T12:00:00Z", "2026-11-13T12:00:00Z", "2026-11-20T12:00:00Z",
                                 "2026-11-27T12:00:00Z"});
}

TEST_CASE("time zones: Europe/Moscow is UTC+3 all year") {
  CHECK(fires("0 2 * * *", "Europe/Moscow", "2026-07-01T00:00:00Z", 2) ==
        std::vector<std::string>{"2026-07-01T23:00:00Z", "2026-07-02T23:00:00Z"});
}

TEST_CASE("DST spring forward: a skipped local time fires once, at the transition") {
  // New York, Sunday 8 March 2026: 02:00 EST jumps to 03:00 EDT (07:00Z). 02:30 does not exist that day.
  CHECK(fires("30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z", 3) ==
        std::vector<std::string>{"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z"});
  // Hourly jobs: 01:00 EST, then 03:00 EDT; the hour that does not exist is not made up twice.
  CHECK(fires("0 * * * *", "America/New_York", "2026-03-08T05:30:00Z", 3) ==
        std::vector<std::string>{"2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z"});
}

TEST_CASE("DST fall back: a repeated local time fires only at its first occurrence") {
  // New York, Sunday 1 November 2026: 02:00 EDT falls back to 01:00 EST; 01:30 happens at 05:30Z and 06:30Z.
  CHECK(fires("30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z", 2) ==
        std::vector<std::string>{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"});
  // Asked from inside the second 01:xx hour, the repeated times are not fired again.
  CHECK(fires("45 1 * * *", "America/New_York", "2026-11-01T06:10:00Z", 1) ==
        std::vector<std::string>{"2026-11-02T06:45:00Z"});
}

TEST_CASE("bad expressions get an error naming the field") {
  auto err = [](const char* e, const char* tz = "UTC") {
    auto c = CronSchedule::parse(e, tz);
    REQUIRE_FALSE(c.ok());
    return c.error().detail;
  };
  CHECK(err("* * * *") == "a cron expression has 5 fields (minute hour day-of-month month day-of-week), got 4");
  CHECK(err("60 * * * *") == "minute: 60 is outside 0-59");
  CHECK(err("* 5-2 * * *") == "hour: '5-2' is a descending range");
  CHECK(err("*/0 * * * *") == "minute: '*/0' has a bad step");
  CHECK(err("* * 0 * *") == "day-of-month: 0 is outside 1-31");
  CHECK(err("* * * foo *") == "month: 'foo' is not a value");
  CHECK(err("1,,2 * * * *") == "minute: '' is empty");
  CHECK(CronSchedule::parse("* * * * *", "Mars/Olympus").error().code == Code::not_found);
  auto never = CronSchedule::parse("0 0 30 2 *");
  REQUIRE(never.ok());
  CHECK(never->next(utc("2026-01-01T00:00:00Z")).error().code == Code::not_found);
}
