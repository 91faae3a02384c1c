// Seeded, learnable generated data: the files behind `tsum-train gen-cifar` / `gen-tokens`, and the
// patterns the synthetic data set (synthetic_data.h) draws from.
//
// An image of class c has a per-class colour (a fixed hash of c and the channel), horizontal bands
// whose period depends on c, and uniform noise; a token sequence of class c draws a quarter of its
// tokens from c's own small set of ids and the rest uniformly from the shared ids above them. Both
// are easy enough that a few optimizer steps lower the loss, and noisy enough not to be trivial.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace tsum::workload {

// splitmix64: tiny, fast, and the same stream on every platform.
class DataRng {
 public:
  explicit DataRng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  std::int64_t below(std::int64_t n);  // uniform in [0, n), n >= 1

 private:
  std::uint64_t state_;
};

// Writes a `channels` x `height` x `width` image (channel planes, rows row-major) of class `label`.
void draw_class_image(std::int64_t label, std::int64_t channels, std::int64_t height,
                      std::int64_t width, DataRng& rng, std::uint8_t* pixels);

// Ids 1..kSignalTokens*2 are the class signals (class 0 the lower half, class 1 the upper);
// ordinary ids are in (kSignalTokens*2, vocab). Vocab must exceed 2*kSignalTokens + 1.
inline constexpr std::int64_t kSignalTokens = 10;
std::vector<std::int64_t> draw_class_tokens(std::int64_t label, std::int64_t length,
                                            std::int64_t vocab, DataRng& rng);

// Test examples written alongside `n` training examples: ceil(n/5).
std::int64_t generated_test_count(std::int64_t n);

// gen-cifar: `n` training records spread over data_batch_1..5.bin (n >= 5) and ceil(n/5) test
// records in test_batch.bin, in `dir` (created if missing). unavailable on an I/O failure.
Status write_cifar_files(const std::string& dir, std::int64_t n, std::uint64_t seed);

// gen-tokens: `n` training lines in train.txt and ceil(n/5) test lines in test.txt (see
// token_data.h), lengths uniform in [20, 150] so that both padding and truncation occur, ids below
// kGenTokensVocab.
inline constexpr std::int64_t kGenTokensVocab = 2000;
Status write_token_files(const std::string& dir, std::int64_t n, std::uint64_t seed);

}  // namespace tsum::workload
