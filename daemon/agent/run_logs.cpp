#include "daemon/agent/run_logs.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace tsum::daemon {

using nlohmann::json;

json LogLine::to_json() const {
  return {{"seq", seq}, {"source", source}, {"n", n}, {"time", time}, {"text", text}};
}

bool RunLogs::is_source(std::string_view s) {
  return !s.empty() && s.size() <= 16 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); });
}

Result<std::vector<SentLine>> RunLogs::parse_body(std::string_view body) {
  std::vector<SentLine> out;
  size_t number = 0;
  while (!body.empty()) {
    ++number;
    const size_t eol = body.find('\n');
    std::string_view line = body.substr(0, eol);
    body = eol == std::string_view::npos ? std::string_view{} : body.substr(eol + 1);
    const size_t space = line.find(' ');
    double mono = 0;
    const std::string_view stamp = line.substr(0, space);
    auto [end, ec] = std::from_chars(stamp.data(), stamp.data() + stamp.size(), mono);
    if (space == std::string_view::npos || ec != std::errc{} || end != stamp.data() + stamp.size() ||
        !std::isfinite(mono) || mono < 0 || mono > 1e9)
      return make_error(Code::invalid_argument, "line " + std::to_string(number) +
                                                    " of the body is not \"MONO_S TEXT\" with MONO_S in [0, 1e9]");
    std::string text(line.substr(space + 1));
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.size() > kLineBytes) {
      size_t cut = kLineBytes;
      while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
      const size_t left = text.size() - cut;
      text.resize(cut);
      text += " [... " + std::to_string(left) + " more bytes]";
    }
    out.push_back({mono, std::move(text)});
  }
  return out;
}

Result<int64_t> RunLogs::next(int64_t run_id, const std::string& source) {
  auto q = db_.prepare("SELECT next FROM run_log_sources WHERE run_id = ? AND source = ?");
  if (!q) return q.error();
  q->bind(run_id, source);
  auto row = q->step();
  if (!row) return row.error();
  return *row ? q->int64(0) : int64_t{0};
}

Result<int64_t> RunLogs::append(int64_t run_id, const std::string& source, int64_t from, double now_mono,
                                const std::vector<SentLine>& lines) {
  Transaction tx(db_);
  if (auto b = tx.begun(); !b) return b.error();
  auto held = next(run_id, source);
  if (!held) return held.error();
  if (from > *held) return make_error(Code::already_exists, "resend from " + std::to_string(*held));
  const int64_t skip = *held - from;  // already held
  if (skip >= static_cast<int64_t>(lines.size())) return *held;
  const double received = clock_.now_s();
  int64_t n = *held;
  for (size_t i = static_cast<size_t>(skip); i < lines.size(); ++i, ++n) {
    // Prepared per line (the pool hands back the same one, reset): a statement is bound once per execution.
    auto ins = db_.prepare("INSERT INTO run_log_lines (run_id, source, n, time, line) VALUES (?, ?, ?, ?, ?)");
    if (!ins) return ins.error();
    // The machine's clock read now_mono as it sent: a line written `ago` seconds before was written then.
    const double ago = std::max(0.0, now_mono - lines[i].mono_s);
    ins->bind(run_id, source, n, received - ago, lines[i].text);
    if (auto s = ins->run(); !s) return s.error();
  }
  auto up = db_.prepare(
      "INSERT INTO run_log_sources (run_id, source, next) VALUES (?, ?, ?) "
      "ON CONFLICT (run_id, source) DO UPDATE SET next = excluded.next");
  if (!up) return up.error();
  up->bind(run_id, source, n);
  if (auto s = up->run(); !s) return s.error();
  if (auto s = trim(run_id); !s) return s.error();
  if (auto s = tx.commit(); !s) return s.error();
  return n;
}

// Deletes the lines between the run's first kHeadLines and its last kTailLines.
Status RunLogs::trim(int64_t run_id) {
  auto nth = [&](const char* order, int64_t offset) -> Result<std::optional<int64_t>> {
    auto q = db_.prepare(std::string("SELECT seq FROM run_log_lines WHERE run_id = ? ORDER BY seq ") + order +
                         " LIMIT 1 OFFSET ?");
    if (!q) return q.error();
    q->bind(run_id, offset);
    auto row = q->step();
    if (!row) return row.error();
    return *row ? std::optional<int64_t>(q->int64(0)) : std::nullopt;
  };
  auto over = nth("ASC", kHeadLines + kTailLines);
  if (!over) return over.error();
  if (!*over) return {};  // within the cap
  auto head_last = nth("ASC", kHeadLines - 1);
  auto tail_first = nth("DESC", kTailLines - 1);
  if (!head_last) return head_last.error();
  if (!tail_first) return tail_first.error();
  auto del = db_.prepare("DELETE FROM run_log_lines WHERE run_id = ? AND seq > ? AND seq < ?");
  if (!del) return del.error();
  del->bind(run_id, head_last->value_or(0), tail_first->value_or(0));
  return del->run();
}

Result<std::vector<LogLine>> RunLogs::read(int64_t run_id, int64_t after_seq, int limit) {
  auto q = db_.prepare(
      "SELECT seq, source, n, time, line FROM run_log_lines WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?");
  if (!q) return q.error();
  q->bind(run_id, after_seq, static_cast<int64_t>(limit));
  std::vector<LogLine> out;
  for (;;) {
    auto row = q->step();
    if (!row) return row.error();
    if (!*row) break;
    out.push_back({q->int64(0), q->text(1), q->int64(2), q->real(3), q->text(4)});
  }
  return out;
}

Result<int64_t> RunLogs::dropped(int64_t run_id) {
  auto q = db_.prepare(
      "SELECT (SELECT coalesce(sum(next), 0) FROM run_log_sources WHERE run_id = ?1) - "
      "(SELECT count(*) FROM run_log_lines WHERE run_id = ?1)");
  if (!q) return q.error();
  q->bind(run_id);
  auto row = q->step();
  if (!row) return row.error();
  return *row ? q->int64(0) : int64_t{0};
}

}  // namespace tsum::daemon
