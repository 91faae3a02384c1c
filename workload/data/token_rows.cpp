#include "workload/data/token_rows.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <string_view>

namespace tsum::workload {
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// The whitespace-separated fields of `line`.
std::vector<std::string_view> fields_of(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_blank(line[i])) ++i;
    const std::size_t start = i;
    while (i < line.size() && !is_blank(line[i])) ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

// A decimal integer in [0, max], or -1.
std::int64_t parse_id(std::string_view text, std::int64_t max) {
  std::int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || v < 0 || v > max) return -1;
  return v;
}

struct Example {
  std::int64_t label = 0;
  std::vector<std::int64_t> tokens;
};

// Parses one line; `where` is "PATH:LINE" for errors.
Result<Example> parse_line(std::string_view line, const std::string& where) {
  const auto fields = fields_of(line);
  if (fields.empty()) {
    return make_error(Code::invalid_argument, where + ": empty line (expected 'LABEL TOKEN ...')");
  }
  Example ex;
  ex.label = parse_id(fields[0], 1);
  if (ex.label < 0) {
    return make_error(Code::invalid_argument,
                      where + ": label '" + std::string(fields[0]) + "' is not 0 or 1");
  }
  for (std::size_t i = 1; i < fields.size(); ++i) {
    const std::int64_t id = parse_id(fields[i], kMaxTokenId);
    if (id < 0) {
      return make_error(Code::invalid_argument,
                        where + ": token " + std::to_string(i) + " '" + std::string(fields[i]) +
                            "' is not an id in [0, " + std::to_string(kMaxTokenId) + "]");
    }
    ex.tokens.push_back(id);
  }
  return ex;
}

}  // namespace

void fit_sequence(const std::vector<std::int64_t>& tokens, std::int64_t* row) {
  const auto n = static_cast<std::int64_t>(tokens.size());
  const std::int64_t kept = std::min(n, kSequenceLength);
  const std::int64_t pad = kSequenceLength - kept;
  std::fill(row, row + pad, 0);
  std::copy(tokens.end() - kept, tokens.end(), row + pad);
}

Result<TokenRows> read_token_rows(const std::string& path, std::int64_t limit) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return make_error(Code::not_found, path + ": " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) return make_error(Code::invalid_argument, path + ": is a directory");
  std::ifstream in(path);
  if (!in) return make_error(Code::not_found, path + ": cannot open");
  TokenRows rows;
  auto& ids = rows.ids;
  auto& labels = rows.labels;
  std::string line;
  for (std::int64_t number = 1;
       (limit <= 0 || std::ssize(labels) < limit) && std::getline(in, line); ++number) {
    auto ex = parse_line(line, path + ":" + std::to_string(number));
    if (!ex.ok()) return ex.error();
    labels.push_back(ex->label);
    ids.resize(ids.size() + kSequenceLength);
    fit_sequence(ex->tokens, ids.data() + ids.size() - kSequenceLength);
    for (const std::int64_t id : ex->tokens) rows.max_id = std::max(rows.max_id, id);
  }
  if (in.bad()) return make_error(Code::invalid_argument, path + ": read error");
  if (labels.empty()) return make_error(Code::invalid_argument, path + ": empty file, no examples");
  return rows;
}

}  // namespace tsum::workload
