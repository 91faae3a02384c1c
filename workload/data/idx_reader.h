// Reader for the IDX file format used by MNIST and Fashion-MNIST.
//
// A file is either raw IDX or gzip-compressed IDX; the two are told apart by the gzip magic bytes
// (1f 8b), never by the file name. The header is a big-endian magic number followed by one
// big-endian uint32 per dimension:
//   images: 0x00000803, count, rows, cols, then count*rows*cols bytes of pixels
//   labels: 0x00000801, count, then count bytes of labels
//
// Every failure is an Error whose detail starts with the file path and says what is wrong:
//   not_found        the file does not exist or cannot be opened
//   invalid_argument wrong magic, truncated header or payload, corrupt gzip stream
// Bytes after the payload the header declares are ignored, and so are records after `max_count`
// when one is given: a run that uses the first N examples decompresses only those.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace tsum::workload {

inline constexpr std::uint32_t kIdxImagesMagic = 0x00000803;
inline constexpr std::uint32_t kIdxLabelsMagic = 0x00000801;

struct IdxImages {
  std::int64_t declared = 0;  // the header's count
  std::int64_t count = 0;     // images read: declared, or fewer under max_count
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::vector<std::uint8_t> pixels;  // count*rows*cols bytes, row-major, image after image
};

struct IdxLabels {
  std::int64_t declared = 0;  // the header's count
  std::int64_t count = 0;     // labels read
  std::vector<std::uint8_t> labels;  // count bytes
};

// Reads an images file: all of it, or its first `max_count` images when max_count > 0 (count is then
// min(header count, max_count)). The payload read is validated against the header's dimensions.
Result<IdxImages> read_idx_images(const std::string& path, std::int64_t max_count = 0);

// Reads a labels file, all or its first `max_count` labels, validated like read_idx_images.
Result<IdxLabels> read_idx_labels(const std::string& path, std::int64_t max_count = 0);

}  // namespace tsum::workload
