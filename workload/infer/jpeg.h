// JPEG files for the inference benchmark: written by `tsum-train gen-images`, decoded by the
// loaders of `tsum-train infer --source files` (libjpeg-turbo's TurboJPEG API).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tsum::workload {

// Interleaved 8-bit RGB, row-major: pixels[(y * width + x) * 3 + c].
struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> pixels;
};

// Writes `image` as a baseline JPEG (4:2:0) of `quality` 1..100. unavailable when the file cannot
// be written; invalid_argument for an image whose pixel count does not match its size.
Status write_jpeg(const std::string& path, const RgbImage& image, int quality);

// The most pixels read_jpeg decodes (64 Mpx, 192 MiB of RGB): a header may claim 65500 x 65500 (12 GiB) in a
// few bytes.
inline constexpr std::int64_t kMaxJpegPixels = std::int64_t{1} << 26;

// Decodes a JPEG held in memory to RGB; `what` names it in errors. invalid_argument for bytes that are not a
// (complete) JPEG or one over kMaxJpegPixels.
Result<RgbImage> decode_jpeg(std::string_view bytes, const std::string& what);

// Writes `image` as width x height x channels floats (channels-last) normalized with the ImageNet mean and
// standard deviation, the input pipeline of ResNet-50; one channel is the mean of R, G and B.
void normalize_image(const RgbImage& image, int channels, float* dst);

// Reads and decodes a JPEG file to RGB. not_found for a missing file; invalid_argument, naming the
// file and the decoder's reason, for one that is not a (complete) JPEG or is over kMaxJpegPixels.
Result<RgbImage> read_jpeg(const std::string& path);

}  // namespace tsum::workload
