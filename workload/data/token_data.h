// Token-sequence data for the bilstm model: a plain-text format, one example per line.
//
// A data directory holds train.txt (the training split) and test.txt (the test split). Each line is
//   LABEL TOKEN TOKEN ...
// separated by spaces or tabs: LABEL is 0 or 1, each TOKEN a decimal id in [0, kMaxTokenId]; a line
// may have no tokens. Id 0 is the padding id. Sequences are fitted to kSequenceLength as Keras's
// pad_sequences does by default: a longer one keeps its last kSequenceLength tokens, a shorter one
// is left-padded with 0. The vocabulary is the largest id + 1.
//
// Every failure is an Error whose detail starts with the file path (and "PATH:LINE" for a line):
//   not_found        the file does not exist
//   invalid_argument a directory, a file with no examples, an empty line, a label that is not 0 or
//                    1, a token that is not a decimal integer in range
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "workload/data/dataset.h"
#include "workload/data/token_rows.h"

namespace tsum::workload {

// DIR/train.txt or DIR/test.txt.
std::string token_file(const std::string& dir, Split split);

// The first `limit` examples (all when limit <= 0) of a token file: inputs int64
// [N, kSequenceLength], labels int64 [N], vocab = largest id + 1.
Result<Dataset> read_token_file(const std::string& path, std::int64_t limit);

Result<Dataset> load_token_dataset(const std::string& dir, Split split, std::int64_t limit);

}  // namespace tsum::workload
