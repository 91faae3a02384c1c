// The token-sequence text format (token_data.h), read without torch: one example per line,
//   LABEL TOKEN TOKEN ...
// LABEL 0 or 1, each TOKEN a decimal id in [0, kMaxTokenId], separated by spaces or tabs. Errors name
// "PATH:LINE": not_found, invalid_argument (a directory, no examples, an empty line, a bad label or token).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace tsum::workload {

inline constexpr std::int64_t kSequenceLength = 100;
inline constexpr std::int64_t kMaxTokenId = (1 << 24) - 1;

// Copies `tokens` into `row` (kSequenceLength ids): the last kSequenceLength tokens, left-padded
// with 0 when there are fewer.
void fit_sequence(const std::vector<std::int64_t>& tokens, std::int64_t* row);

// The examples of a token file, each fitted to kSequenceLength ids.
struct TokenRows {
  std::vector<std::int64_t> ids;     // labels.size() * kSequenceLength
  std::vector<std::int64_t> labels;  // 0 or 1
  std::int64_t max_id = 0;
};

// The first `limit` examples (all when limit <= 0) of the file at `path`.
Result<TokenRows> read_token_rows(const std::string& path, std::int64_t limit);

}  // namespace tsum::workload
