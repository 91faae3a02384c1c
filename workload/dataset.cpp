#include "workload/dataset.h"

#include <sys/stat.h>

#include <algorithm>

#include "workload/idx_reader.h"

namespace tsum::workload {
namespace {

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

Result<std::string> resolve_idx_file(const std::string& dir, const std::string& name) {
  const std::string base = dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
  if (is_regular_file(base + ".gz")) return base + ".gz";
  if (is_regular_file(base)) return base;
  return make_error(Code::not_found, base + ".gz: not found (nor " + base + ")");
}

Result<Dataset> load_dataset(const std::string& dir, std::string_view prefix, std::int64_t limit,
                             std::int64_t classes) {
  auto images_path = resolve_idx_file(dir, std::string(prefix) + "-images-idx3-ubyte");
  if (!images_path.ok()) return images_path.error();
  auto labels_path = resolve_idx_file(dir, std::string(prefix) + "-labels-idx1-ubyte");
  if (!labels_path.ok()) return labels_path.error();

  auto images = read_idx_images(*images_path);
  if (!images.ok()) return images.error();
  auto labels = read_idx_labels(*labels_path);
  if (!labels.ok()) return labels.error();
  if (images->count != labels->count) {
    return make_error(Code::invalid_argument,
                      *images_path + ": has " + std::to_string(images->count) + " images but " +
                          *labels_path + " has " + std::to_string(labels->count) + " labels");
  }
  const std::int64_t n = limit > 0 ? std::min(limit, images->count) : images->count;
  for (std::int64_t i = 0; i < n; ++i) {
    if (labels->labels[static_cast<std::size_t>(i)] >= classes) {
      return make_error(Code::invalid_argument,
                        *labels_path + ": label " +
                            std::to_string(labels->labels[static_cast<std::size_t>(i)]) +
                            " at index " + std::to_string(i) + " is out of range for " +
                            std::to_string(classes) + " classes");
    }
  }

  try {
    Dataset out;
    const auto u8 = torch::TensorOptions().dtype(torch::kUInt8);
    out.images = torch::from_blob(images->pixels.data(), {n, 1, images->rows, images->cols}, u8)
                     .to(torch::kFloat32)
                     .div_(255.0f)
                     .contiguous();
    out.labels = torch::from_blob(labels->labels.data(), {n}, u8).to(torch::kInt64);
    out.images_path = *images_path;
    out.labels_path = *labels_path;
    return out;
  } catch (const std::exception& e) {
    return make_error(Code::internal, *images_path + ": cannot build tensors: " + e.what());
  }
}

}  // namespace tsum::workload
