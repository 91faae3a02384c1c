#include "daemon/schedules/cron.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <span>
#include <sstream>

#include <cctz/civil_time.h>

namespace tsum::daemon {

namespace {

struct FieldSpec {
  const char* name;
  int lo, hi;
  std::span<const std::string_view> names;  // names[i] stands for lo + i
};

constexpr std::array<std::string_view, 12> kMonths = {"jan", "feb", "mar", "apr", "may", "jun",
                                                      "jul", "aug", "sep", "oct", "nov", "dec"};
constexpr std::array<std::string_view, 8> kDays = {"sun", "mon", "tue", "wed", "thu", "fri", "sat", "sun"};

Result<int> parse_value(std::string_view tok, const FieldSpec& f) {
  std::string lower(tok);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (size_t i = 0; i < f.names.size(); ++i)
    if (lower == f.names[i]) return f.lo + static_cast<int>(i);
  int v = 0;
  auto [end, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
  if (ec != std::errc() || end != tok.data() + tok.size() || tok.empty())
    return make_error(Code::invalid_argument, std::string(f.name) + ": '" + std::string(tok) + "' is not a value");
  if (v < f.lo || v > f.hi)
    return make_error(Code::invalid_argument, std::string(f.name) + ": " + std::to_string(v) + " is outside " +
                                                  std::to_string(f.lo) + "-" + std::to_string(f.hi));
  return v;
}

// Fills `bits` (indexed by value) from one field. `any` tells whether the field was a bare "*".
Result<std::vector<int>> parse_field(std::string_view text, const FieldSpec& f, bool* any) {
  *any = text == "*";
  std::vector<int> values;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string_view item = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    start = comma == std::string_view::npos ? text.size() + 1 : comma + 1;
    auto bad = [&](const std::string& why) {
      return make_error(Code::invalid_argument, std::string(f.name) + ": '" + std::string(item) + "' " + why);
    };
    if (item.empty()) return bad("is empty");
    int step = 1;
    if (auto slash = item.find('/'); slash != std::string_view::npos) {
      std::string_view s = item.substr(slash + 1);
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), step);
      if (ec != std::errc() || end != s.data() + s.size() || s.empty() || step < 1) return bad("has a bad step");
      item = item.substr(0, slash);
      if (item.empty()) return bad("has no range before the step");
    }
    int lo = f.lo, hi = f.hi;
    if (item != "*") {
      auto dash = item.find('-');
      auto a = parse_value(item.substr(0, dash), f);
      if (!a) return a.error();
      lo = *a;
      if (dash != std::string_view::npos) {
        auto b = parse_value(item.substr(dash + 1), f);
        if (!b) return b.error();
        hi = *b;
        if (hi < lo) return bad("is a descending range");
      } else if (step == 1) {
        hi = lo;  // a single value; "A/S" keeps hi at the field's maximum
      }
    }
    for (int v = lo; v <= hi; v += step) values.push_back(v);
  }
  return values;
}

std::string expand_macro(std::string_view expr) {
  static const std::array<std::pair<std::string_view, std::string_view>, 7> kMacros = {{
      {"@hourly", "0 * * * *"},
      {"@daily", "0 0 * * *"},
      {"@midnight", "0 0 * * *"},
      {"@weekly", "0 0 * * 0"},
      {"@monthly", "0 0 1 * *"},
      {"@yearly", "0 0 1 1 *"},
      {"@annually", "0 0 1 1 *"},
  }};
  for (auto [name, value] : kMacros)
    if (expr == name) return std::string(value);
  return std::string(expr);
}

int cron_weekday(const cctz::civil_day& d) {
  // cctz: monday .. sunday; cron: sunday = 0.
  switch (cctz::get_weekday(d)) {
    case cctz::weekday::sunday: return 0;
    case cctz::weekday::monday: return 1;
    case cctz::weekday::tuesday: return 2;
    case cctz::weekday::wednesday: return 3;
    case cctz::weekday::thursday: return 4;
    case cctz::weekday::friday: return 5;
    case cctz::weekday::saturday: return 6;
  }
  return 0;
}

}  // namespace

Result<CronSchedule> CronSchedule::parse(std::string_view expr, const std::string& timezone) {
  CronSchedule c;
  c.expr_ = std::string(expr);
  c.tz_name_ = timezone;
  if (!cctz::load_time_zone(timezone, &c.tz_))
    return make_error(Code::not_found, "unknown time zone '" + timezone + "'");
  std::istringstream in(expand_macro(expr));
  std::vector<std::string> fields;
  for (std::string f; in >> f;) fields.push_back(f);
  if (fields.size() != 5)
    return make_error(Code::invalid_argument, "a cron expression has 5 fields (minute hour day-of-month month "
                                              "day-of-week), got " + std::to_string(fields.size()));
  const FieldSpec specs[5] = {{"minute", 0, 59, {}},
                              {"hour", 0, 23, {}},
                              {"day-of-month", 1, 31, {}},
                              {"month", 1, 12, kMonths},
                              {"day-of-week", 0, 7, kDays}};
  bool any[5];
  for (int i = 0; i < 5; ++i) {
    auto values = parse_field(fields[i], specs[i], &any[i]);
    if (!values) return values.error();
    for (int v : *values) {
      switch (i) {
        case 0: c.minutes_.set(v); break;
        case 1: c.hours_.set(v); break;
        case 2: c.mdays_.set(v); break;
        case 3: c.months_.set(v); break;
        case 4: c.wdays_.set(v % 7); break;
      }
    }
  }
  c.mday_any_ = any[2];
  c.wday_any_ = any[4];
  return c;
}

bool CronSchedule::day_matches(int mday, int month, int wday) const {
  if (!months_.test(month)) return false;
  if (mday_any_ && wday_any_) return true;
  if (mday_any_) return wdays_.test(wday);
  if (wday_any_) return mdays_.test(mday);
  return mdays_.test(mday) || wdays_.test(wday);
}

Result<SysSeconds> CronSchedule::next(SysSeconds after) const {
  const auto local = cctz::convert(after, tz_);
  const cctz::civil_minute first = cctz::civil_minute(local) + 1;
  const cctz::civil_day first_day(first);
  for (cctz::civil_day d = first_day; d < first_day + 8 * 366; ++d) {
    if (!day_matches(d.day(), d.month(), cron_weekday(d))) continue;
    for (int h = (d == first_day ? first.hour() : 0); h < 24; ++h) {
      if (!hours_.test(h)) continue;
      int m0 = (d == first_day && h == first.hour()) ? first.minute() : 0;
      for (int m = m0; m < 60; ++m) {
        if (!minutes_.test(m)) continue;
        // convert() maps a skipped local time to its transition and a repeated one to its first occurrence.
        auto t = cctz::convert(cctz::civil_second(d.year(), d.month(), d.day(), h, m, 0), tz_);
        if (t > after) return SysSeconds(t.time_since_epoch());
      }
    }
  }
  return make_error(Code::not_found, "'" + expr_ + "' never fires in the next 8 years");
}

Result<std::vector<SysSeconds>> CronSchedule::next_n(SysSeconds after, int count) const {
  std::vector<SysSeconds> out;
  for (int i = 0; i < count; ++i) {
    auto t = next(after);
    if (!t) return t.error();
    out.push_back(*t);
    after = *t;
  }
  return out;
}

}  // namespace tsum::daemon
