// RunLogs: a run's output, line by line, as its agents send it (POST /v1/runs/{id}/logs) and as users read it
// (GET /v1/runs/{id}/logs, `tsumd runs logs ID -f`, the run page's log panel). The run_log_lines and
// run_log_sources tables (sql/0011_run_logs.sql) hold it, so it outlives a daemon restart.
//
// A source is one machine of one attempt ("a1n0": attempt 1, node 0). It numbers its lines from 0 and sends
// them in order, from any number: the daemon keeps the lines past the next one it expects and answers with the
// new next, so a retried send adds nothing twice, and a send that starts past a gap is refused with the number to
// resend from. That number is the daemon's, which is what lets an agent whose connection broke lose no line.
//
// The cap: a run keeps its first kHeadLines lines and its last kTailLines (a training loop's first screen and its
// end); lines between are deleted as new ones come, and a line is cut at kLineBytes. A reader sees the gap as a
// jump in a source's line numbers.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "daemon/store/db.h"

namespace tsum::daemon {

struct LogLine {
  int64_t seq = 0;     // arrival order: the cursor a reader goes on from
  std::string source;  // "a1n0"
  int64_t n = 0;       // the line's number in its source
  double time = 0;     // daemon clock: when the machine wrote it
  std::string text;
  nlohmann::json to_json() const;
};

// One line as an agent sends it: its machine's CLOCK_BOOTTIME when written, and the text.
struct SentLine {
  double mono_s = 0;
  std::string text;
};

class RunLogs {
 public:
  static constexpr int64_t kHeadLines = 1000;
  static constexpr int64_t kTailLines = 10000;
  static constexpr size_t kLineBytes = 8192;
  static constexpr size_t kBodyBytes = 1 << 20;  // one POST's body

  RunLogs(Db& db, const Clock& clock) : db_(db), clock_(clock) {}

  // The body of an agent's POST: lines "MONO_S TEXT\n" (the last newline optional). invalid_argument naming the
  // first line that is not so, or a time that is not a finite number in [0, 1e9].
  static Result<std::vector<SentLine>> parse_body(std::string_view body);
  // True for 1..16 of [a-z0-9].
  static bool is_source(std::string_view s);

  // Adds `lines`, the source's lines from number `from`, sent when the machine's clock read `now_mono` (which
  // places each line on the daemon's clock). Returns the source's next line number. already_exists when `from`
  // is past it (detail: "resend from N"); the caller answers 409 with next().
  Result<int64_t> append(int64_t run_id, const std::string& source, int64_t from, double now_mono,
                         const std::vector<SentLine>& lines);
  // The next line number the daemon expects from the source (0 for a source it has not heard).
  Result<int64_t> next(int64_t run_id, const std::string& source);
  // Up to `limit` lines after `after_seq`, in arrival order.
  Result<std::vector<LogLine>> read(int64_t run_id, int64_t after_seq, int limit);
  // Lines received and not kept (the middle the cap dropped).
  Result<int64_t> dropped(int64_t run_id);

 private:
  Status trim(int64_t run_id);

  Db& db_;
  const Clock& clock_;
};

}  // namespace tsum::daemon
