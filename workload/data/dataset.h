// The room workload/data/ owns training data: the readers (IDX, CIFAR-10, token text), generated and synthetic data,
// augmentation and the in-memory data set. It calls models/ (a model's input shape) and common/.
//
// In-memory training data: one split (train or test) of a data set, normalized once so the training
// loop only slices by index. Four kinds:
//   idx        MNIST / Fashion-MNIST IDX files, raw or gzip (idx_reader.h): images x/255
//   cifar10    CIFAR-10 binary batches (cifar_data.h): images x/255
//   tokens     token-sequence text files (token_data.h): int64 ids, padded/truncated
//   synthetic  seeded generated data of any model's shape (synthetic_data.h); no files
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"
#include "workload/models/model.h"

namespace tsum::workload {

enum class DataKind { idx, cifar10, tokens, synthetic };
enum class Split { train, test };

inline constexpr std::string_view kDefaultDataDir = "/usr/share/datasets/fashion-mnist";
inline constexpr std::string_view kTrainPrefix = "train";
inline constexpr std::string_view kTestPrefix = "t10k";

struct Dataset {
  torch::Tensor inputs;     // float32 [N, C, H, W] in [0, 1], or int64 ids [N, length]; contiguous
  torch::Tensor labels;     // int64 [N]
  std::int64_t vocab = 0;   // token data: largest id + 1
  std::string inputs_path;  // the file the inputs came from, for error messages
  std::string labels_path;
  std::int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
};

// "idx", "cifar10", "tokens", "synthetic"; invalid_argument naming the known kinds otherwise.
Result<DataKind> parse_data_kind(std::string_view name);
std::string_view data_kind_name(DataKind kind);
std::string data_kind_names();  // comma separated, for usage text

// Where a kind's files are looked for when --data is not given ("" for synthetic).
std::string_view default_data_dir(DataKind kind);

// Returns DIR/NAME.gz if it exists, else DIR/NAME if it exists, else a not_found error naming both.
Result<std::string> resolve_idx_file(const std::string& dir, const std::string& name);

// Loads `<prefix>-images-idx3-ubyte[.gz]` and `<prefix>-labels-idx1-ubyte[.gz]` from `dir`, keeps
// the first `limit` examples (all when limit <= 0 or larger than the file), and normalizes to
// x/255. Errors (each detail names the file): any read_idx_* error; invalid_argument when the image
// and label counts differ.
Result<Dataset> load_idx_dataset(const std::string& dir, std::string_view prefix,
                                 std::int64_t limit);

// One split of a file-backed kind (not synthetic) from `dir`, first `limit` examples (all when
// limit <= 0). Errors name the file: not_found when missing, invalid_argument when malformed.
Result<Dataset> load_dataset(DataKind kind, const std::string& dir, Split split,
                             std::int64_t limit);

// invalid_argument naming the data's file when `data` does not fit a model reading `shape`: images
// where tokens are expected (or the reverse), another image size, a label >= shape.classes, or a
// token id >= shape.vocab.
Status check_dataset(const Dataset& data, const InputShape& shape, std::string_view model);

}  // namespace tsum::workload
