#include "workload/data/dataset.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>

#include "workload/data/cifar_data.h"
#include "workload/data/idx_reader.h"
#include "workload/data/token_data.h"

namespace tsum::workload {
namespace {

struct KindEntry {
  DataKind kind;
  std::string_view name;
  std::string_view default_dir;
};

constexpr std::array<KindEntry, 4> kKinds = {{
    {DataKind::idx, "idx", kDefaultDataDir},
    {DataKind::cifar10, "cifar10", "/usr/share/datasets/cifar-10-batches-bin"},
    {DataKind::tokens, "tokens", "/usr/share/datasets/tokens"},
    {DataKind::synthetic, "synthetic", ""},
}};

const KindEntry& entry_of(DataKind kind) {
  for (const auto& e : kKinds) {
    if (e.kind == kind) return e;
  }
  return kKinds[0];
}

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Index of the first true element of a bool tensor that has one.
std::int64_t first_true(const torch::Tensor& flags) {
  return flags.nonzero().select(1, 0)[0].item<std::int64_t>();
}

Status check_images(const Dataset& data, const InputShape& shape, std::string_view model) {
  const auto sizes = data.inputs.sizes();
  if (data.inputs.dim() != 4) {
    return make_error(Code::invalid_argument, data.inputs_path + ": holds token sequences, model " +
                                                  std::string(model) + " reads images");
  }
  if (sizes[1] != shape.channels || sizes[2] != shape.height || sizes[3] != shape.width) {
    return make_error(Code::invalid_argument,
                      data.inputs_path + ": images are " + std::to_string(sizes[1]) + "x" +
                          std::to_string(sizes[2]) + "x" + std::to_string(sizes[3]) + ", model " +
                          std::string(model) + " expects " + std::to_string(shape.channels) + "x" +
                          std::to_string(shape.height) + "x" + std::to_string(shape.width));
  }
  return {};
}

Status check_tokens(const Dataset& data, const InputShape& shape, std::string_view model) {
  if (data.inputs.dim() != 2 || data.inputs.scalar_type() != torch::kInt64) {
    return make_error(Code::invalid_argument, data.inputs_path + ": holds images, model " +
                                                  std::string(model) + " reads token sequences");
  }
  if (data.inputs.size(1) != shape.length) {
    return make_error(Code::invalid_argument,
                      data.inputs_path + ": sequences have " + std::to_string(data.inputs.size(1)) +
                          " tokens, model " + std::string(model) + " expects " +
                          std::to_string(shape.length));
  }
  const torch::Tensor too_big = data.inputs.ge(shape.vocab).any(1);
  if (too_big.any().item<bool>()) {
    const std::int64_t i = first_true(too_big);
    return make_error(Code::invalid_argument,
                      data.inputs_path + ": example " + std::to_string(i) + " has token id " +
                          std::to_string(data.inputs[i].max().item<std::int64_t>()) +
                          ", beyond model " + std::string(model) + "'s vocabulary of " +
                          std::to_string(shape.vocab));
  }
  return {};
}

}  // namespace

Result<DataKind> parse_data_kind(std::string_view name) {
  for (const auto& e : kKinds) {
    if (e.name == name) return e.kind;
  }
  return make_error(Code::invalid_argument, "unknown data set '" + std::string(name) +
                                                "' (known: " + data_kind_names() + ")");
}

std::string_view data_kind_name(DataKind kind) { return entry_of(kind).name; }

std::string data_kind_names() {
  std::string out;
  for (const auto& e : kKinds) {
    if (!out.empty()) out += ", ";
    out += e.name;
  }
  return out;
}

std::string_view default_data_dir(DataKind kind) { return entry_of(kind).default_dir; }

Result<std::string> resolve_idx_file(const std::string& dir, const std::string& name) {
  const std::string base = dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
  if (is_regular_file(base + ".gz")) return base + ".gz";
  if (is_regular_file(base)) return base;
  return make_error(Code::not_found, base + ".gz: not found (nor " + base + ")");
}

Result<Dataset> load_idx_dataset(const std::string& dir, std::string_view prefix,
                                 std::int64_t limit) {
  auto images_path = resolve_idx_file(dir, std::string(prefix) + "-images-idx3-ubyte");
  if (!images_path.ok()) return images_path.error();
  auto labels_path = resolve_idx_file(dir, std::string(prefix) + "-labels-idx1-ubyte");
  if (!labels_path.ok()) return labels_path.error();

  auto images = read_idx_images(*images_path, limit);
  if (!images.ok()) return images.error();
  auto labels = read_idx_labels(*labels_path, limit);
  if (!labels.ok()) return labels.error();
  if (images->declared != labels->declared) {
    return make_error(Code::invalid_argument,
                      *images_path + ": has " + std::to_string(images->declared) + " images but " +
                          *labels_path + " has " + std::to_string(labels->declared) + " labels");
  }
  const std::int64_t n = limit > 0 ? std::min(limit, images->count) : images->count;
  try {
    Dataset out;
    const auto u8 = torch::TensorOptions().dtype(torch::kUInt8);
    out.inputs = torch::from_blob(images->pixels.data(), {n, 1, images->rows, images->cols}, u8)
                     .to(torch::kFloat32)
                     .div_(255.0f)
                     .contiguous();
    out.labels = torch::from_blob(labels->labels.data(), {n}, u8).to(torch::kInt64);
    out.inputs_path = *images_path;
    out.labels_path = *labels_path;
    return out;
  } catch (const std::exception& e) {
    return make_error(Code::internal, *images_path + ": cannot build tensors: " + e.what());
  }
}

Result<Dataset> load_dataset(DataKind kind, const std::string& dir, Split split,
                             std::int64_t limit) {
  switch (kind) {
    case DataKind::idx:
      return load_idx_dataset(dir, split == Split::train ? kTrainPrefix : kTestPrefix, limit);
    case DataKind::cifar10:
      return load_cifar_dataset(dir, split, limit);
    case DataKind::tokens:
      return load_token_dataset(dir, split, limit);
    case DataKind::synthetic:
      break;
  }
  return make_error(Code::invalid_argument, "the synthetic data set has no files to load");
}

Status check_dataset(const Dataset& data, const InputShape& shape, std::string_view model) {
  if (data.size() == 0) {
    return make_error(Code::invalid_argument, data.inputs_path + ": no examples");
  }
  try {
    auto st = shape.kind == InputKind::image ? check_images(data, shape, model)
                                             : check_tokens(data, shape, model);
    if (!st.ok()) return st;
    const torch::Tensor bad = data.labels.ge(shape.classes).logical_or(data.labels.lt(0));
    if (bad.any().item<bool>()) {
      const std::int64_t i = first_true(bad);
      return make_error(Code::invalid_argument,
                        data.labels_path + ": label " +
                            std::to_string(data.labels[i].item<std::int64_t>()) + " at index " +
                            std::to_string(i) + " is out of range for " +
                            std::to_string(shape.classes) + " classes");
    }
  } catch (const std::exception& e) {
    return make_error(Code::internal, data.inputs_path + ": cannot check data: " + e.what());
  }
  return {};
}

}  // namespace tsum::workload
