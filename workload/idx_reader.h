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
// Bytes after the payload the header declares are ignored.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace tsum::workload {

inline constexpr std::uint32_t kIdxImagesMagic = 0x00000803;
inline constexpr std::uint32_t kIdxLabelsMagic = 0x00000801;

struct IdxImages {
  std::int64_t count = 0;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::vector<std::uint8_t> pixels;  // count*rows*cols bytes, row-major, image after image
};

struct IdxLabels {
  std::int64_t count = 0;
  std::vector<std::uint8_t> labels;  // count bytes
};

// Reads a whole images file. The payload is validated against the header's dimensions.
Result<IdxImages> read_idx_images(const std::string& path);

// Reads a whole labels file. The payload is validated against the header's count.
Result<IdxLabels> read_idx_labels(const std::string& path);

}  // namespace tsum::workload
