#include "workload/infer/image_files.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>

#include "workload/data/data_gen.h"
#include "workload/infer/jpeg.h"

namespace tsum::workload {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kClasses = 10;
constexpr int kQuality = 90;

bool is_jpeg(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg";
}

}  // namespace

Status write_image_files(const std::string& dir, std::int64_t n, std::int64_t size,
                         std::uint64_t seed) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error(Code::unavailable, dir + ": cannot create: " + ec.message());
  DataRng rng(seed);
  const auto pixels = static_cast<std::size_t>(size * size);
  std::vector<std::uint8_t> planes(pixels * 3);
  RgbImage image{static_cast<int>(size), static_cast<int>(size),
                 std::vector<std::uint8_t>(pixels * 3)};
  for (std::int64_t i = 0; i < n; ++i) {
    draw_class_image(rng.below(kClasses), 3, size, size, rng, planes.data());
    for (std::size_t p = 0; p < pixels; ++p) {
      for (std::size_t c = 0; c < 3; ++c) image.pixels[p * 3 + c] = planes[c * pixels + p];
    }
    char name[32];
    std::snprintf(name, sizeof name, "img-%06lld.jpg", static_cast<long long>(i));
    if (auto st = write_jpeg((fs::path(dir) / name).string(), image, kQuality); !st.ok()) return st;
  }
  return {};
}

Result<std::vector<std::string>> list_images(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return make_error(Code::not_found, dir + ": no such image directory (see gen-images)");
  }
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_regular_file() && is_jpeg(entry.path())) files.push_back(entry.path().string());
  }
  if (files.empty()) return make_error(Code::invalid_argument, dir + ": holds no .jpg files");
  std::sort(files.begin(), files.end());
  return files;
}

Status decode_into(const std::string& path, const InputShape& shape, float* dst) {
  auto image = read_jpeg(path);
  if (!image.ok()) return image.error();
  if (image->width != shape.width || image->height != shape.height) {
    return make_error(Code::invalid_argument,
                      path + ": image is " + std::to_string(image->width) + "x" +
                          std::to_string(image->height) + ", the model reads " +
                          std::to_string(shape.width) + "x" + std::to_string(shape.height));
  }
  normalize_image(*image, static_cast<int>(shape.channels), dst);
  return {};
}

}  // namespace tsum::workload
