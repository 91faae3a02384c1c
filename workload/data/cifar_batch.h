// The CIFAR-10 binary format ("CIFAR-10 binary version" from the data set's authors), read without torch.
//
// Each file is a sequence of 3073-byte records: one label byte (0..9) then 3072 pixel bytes, the 32x32 red,
// green and blue planes in turn, each row-major. Every failure is an Error whose detail starts with the file
// path: not_found (no such file), invalid_argument (a directory, an empty file, a size that is not a whole
// number of records, a label byte above 9).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace tsum::workload {

inline constexpr std::int64_t kCifarClasses = 10;
inline constexpr std::int64_t kCifarSide = 32;
inline constexpr std::int64_t kCifarPixelBytes = 3 * kCifarSide * kCifarSide;
inline constexpr std::int64_t kCifarRecordBytes = 1 + kCifarPixelBytes;
inline constexpr int kCifarTrainFiles = 5;

// A whole batch file, validated: its size is a positive multiple of kCifarRecordBytes and every
// label byte is <= 9.
Result<std::vector<std::uint8_t>> read_cifar_batch(const std::string& path);

}  // namespace tsum::workload
