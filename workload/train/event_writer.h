// JSON-line events on stdout: the contract between tsum-train and the agent.
//
// Each event is one JSON object on one line, flushed at once. The first key is always "event" and
// the second "mono_s" (CLOCK_BOOTTIME seconds, the clock of /proc/uptime); the remaining keys follow
// in the order given. Values are flat scalars (string, number, bool); a non-finite number is written
// as null. The agent's shell script extracts the first two keys with sed, so the order is fixed.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace tsum::workload {

// Seconds of CLOCK_BOOTTIME (includes suspend; same clock as /proc/uptime), nanosecond resolution.
double boottime_seconds();

using EventValue = std::variant<std::int64_t, double, std::string>;
using EventField = std::pair<std::string_view, EventValue>;

class EventWriter {
 public:
  // Writes to `out` (stdout in tsum-train); does not take ownership.
  explicit EventWriter(std::FILE* out) : out_(out) {}

  // Formats one event line (with a trailing newline) stamped with `mono_s`.
  static std::string format(std::string_view event, double mono_s,
                            const std::vector<EventField>& fields);

  // Stamps the event with boottime_seconds() now, writes it and flushes. Fields set with
  // add_common come right after "mono_s", before `fields`.
  void emit(std::string_view event, const std::vector<EventField>& fields);

  // Adds a field to every later event (a distributed run's "rank").
  void add_common(std::string key, EventValue value);

 private:
  std::FILE* out_;
  std::vector<std::pair<std::string, EventValue>> common_;
};

}  // namespace tsum::workload
