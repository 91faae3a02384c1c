#include "workload/infer/jpeg.h"

#include <turbojpeg.h>

#include <fstream>
#include <iterator>
#include <memory>

namespace tsum::workload {
namespace {

struct TjDeleter {
  void operator()(void* handle) const { tjDestroy(handle); }
};
using TjHandle = std::unique_ptr<void, TjDeleter>;

struct TjBuffer {
  unsigned char* data = nullptr;
  ~TjBuffer() { tjFree(data); }
};

std::string tj_error(void* handle) { return tjGetErrorStr2(handle); }

}  // namespace

Status write_jpeg(const std::string& path, const RgbImage& image, int quality) {
  const auto expected = static_cast<std::size_t>(image.width) * image.height * 3;
  if (image.width <= 0 || image.height <= 0 || image.pixels.size() != expected) {
    return make_error(Code::invalid_argument, path + ": image size does not match its pixels");
  }
  TjHandle handle(tjInitCompress());
  if (!handle) return make_error(Code::internal, "tjInitCompress failed");
  TjBuffer jpeg;
  unsigned long size = 0;
  if (tjCompress2(handle.get(), image.pixels.data(), image.width, 0, image.height, TJPF_RGB,
                  &jpeg.data, &size, TJSAMP_420, quality, TJFLAG_ACCURATEDCT) != 0) {
    return make_error(Code::internal, path + ": cannot encode: " + tj_error(handle.get()));
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(jpeg.data), static_cast<std::streamsize>(size));
  if (!out.flush()) return make_error(Code::unavailable, path + ": cannot write");
  return {};
}

Result<RgbImage> decode_jpeg(std::string_view bytes, const std::string& what) {
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  TjHandle handle(tjInitDecompress());
  if (!handle) return make_error(Code::internal, "tjInitDecompress failed");
  int width = 0;
  int height = 0;
  int subsampling = 0;
  int colorspace = 0;
  if (tjDecompressHeader3(handle.get(), data, bytes.size(), &width, &height, &subsampling, &colorspace) != 0) {
    return make_error(Code::invalid_argument, what + ": not a JPEG file: " + tj_error(handle.get()));
  }
  if (static_cast<std::int64_t>(width) * height > kMaxJpegPixels)
    return make_error(Code::invalid_argument, what + ": " + std::to_string(width) + "x" + std::to_string(height) +
                                                  " pixels is over the limit of " + std::to_string(kMaxJpegPixels));
  RgbImage image{width, height, std::vector<std::uint8_t>(static_cast<std::size_t>(width) * height * 3)};
  // TurboJPEG reports a truncated or corrupt stream as an error (TJFLAG_STOPONWARNING), not as a
  // silently grey-filled image.
  if (tjDecompress2(handle.get(), data, bytes.size(), image.pixels.data(), width, 0, height, TJPF_RGB,
                    TJFLAG_STOPONWARNING) != 0) {
    return make_error(Code::invalid_argument, what + ": corrupt or truncated JPEG: " + tj_error(handle.get()));
  }
  return image;
}

Result<RgbImage> read_jpeg(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(Code::not_found, path + ": cannot open");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return decode_jpeg(bytes, path);
}

void normalize_image(const RgbImage& image, int channels, float* dst) {
  constexpr float kMean[3] = {0.485f, 0.456f, 0.406f};
  constexpr float kStd[3] = {0.229f, 0.224f, 0.225f};
  const std::size_t pixels = static_cast<std::size_t>(image.width) * image.height;
  const std::uint8_t* src = image.pixels.data();
  if (channels == 1) {
    for (std::size_t p = 0; p < pixels; ++p) {
      const float gray = (src[p * 3] + src[p * 3 + 1] + src[p * 3 + 2]) / (3.0f * 255.0f);
      dst[p] = (gray - kMean[1]) / kStd[1];
    }
    return;
  }
  for (std::size_t p = 0; p < pixels; ++p) {
    for (std::size_t c = 0; c < 3; ++c) dst[p * 3 + c] = (src[p * 3 + c] / 255.0f - kMean[c]) / kStd[c];
  }
}

}  // namespace tsum::workload
