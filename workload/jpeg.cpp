#include "workload/jpeg.h"

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

Result<RgbImage> read_jpeg(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(Code::not_found, path + ": cannot open");
  const std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)),
                                         std::istreambuf_iterator<char>());
  TjHandle handle(tjInitDecompress());
  if (!handle) return make_error(Code::internal, "tjInitDecompress failed");
  int width = 0;
  int height = 0;
  int subsampling = 0;
  int colorspace = 0;
  if (tjDecompressHeader3(handle.get(), bytes.data(), bytes.size(), &width, &height, &subsampling,
                          &colorspace) != 0) {
    return make_error(Code::invalid_argument,
                      path + ": not a JPEG file: " + tj_error(handle.get()));
  }
  if (static_cast<std::int64_t>(width) * height > kMaxJpegPixels)
    return make_error(Code::invalid_argument, path + ": " + std::to_string(width) + "x" + std::to_string(height) +
                                                  " pixels is over the limit of " + std::to_string(kMaxJpegPixels));
  RgbImage image{width, height, std::vector<std::uint8_t>(static_cast<std::size_t>(width) * height * 3)};
  // TurboJPEG reports a truncated or corrupt stream as an error (TJFLAG_STOPONWARNING), not as a
  // silently grey-filled image.
  if (tjDecompress2(handle.get(), bytes.data(), bytes.size(), image.pixels.data(), width, 0, height,
                    TJPF_RGB, TJFLAG_STOPONWARNING) != 0) {
    return make_error(Code::invalid_argument,
                      path + ": corrupt or truncated JPEG: " + tj_error(handle.get()));
  }
  return image;
}

}  // namespace tsum::workload
