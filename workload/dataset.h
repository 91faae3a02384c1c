// In-memory image classification data set: one split (train or test) of an IDX data directory,
// normalized once to float tensors so the training loop only slices by index.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace tsum::workload {

inline constexpr std::string_view kDefaultDataDir = "/usr/share/datasets/fashion-mnist";
inline constexpr std::string_view kTrainPrefix = "train";
inline constexpr std::string_view kTestPrefix = "t10k";

struct Dataset {
  torch::Tensor images;  // float32 [N, 1, rows, cols], values x/255 in [0, 1], contiguous
  torch::Tensor labels;  // int64 [N]
  std::string images_path;  // the file the images came from, for error messages
  std::string labels_path;
  std::int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
};

// Returns DIR/NAME.gz if it exists, else DIR/NAME if it exists, else a not_found error naming both.
Result<std::string> resolve_idx_file(const std::string& dir, const std::string& name);

// Loads `<prefix>-images-idx3-ubyte[.gz]` and `<prefix>-labels-idx1-ubyte[.gz]` from `dir`, keeps the
// first `limit` examples (all when limit <= 0 or larger than the file), and normalizes to x/255.
// Errors (each detail names the file): any read_idx_* error; invalid_argument when the image and
// label counts differ or a label is >= `classes`.
Result<Dataset> load_dataset(const std::string& dir, std::string_view prefix, std::int64_t limit,
                             std::int64_t classes);

}  // namespace tsum::workload
