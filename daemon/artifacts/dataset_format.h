// What each data set format must hold, checked on upload so a bad archive is refused with the reason before
// any machine downloads it (a truncated archive, a missing split, an IDX file shorter than its header says).
//   idx          train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte,
//                t10k-labels-idx1-ubyte (each raw or .gz) at the archive's top level
//   cifar10-bin  data_batch_1.bin .. and test_batch.bin, each a whole number of 3073-byte records
//   tokens       train.txt and test.txt
//   images       at least one .jpg/.jpeg file
//   files        anything non-empty (a user's own job reads it)
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "daemon/artifacts/tar_archive.h"

namespace tsum::daemon {

inline constexpr std::string_view kDatasetFormats[] = {"idx", "cifar10-bin", "tokens", "images", "files"};
bool is_dataset_format(std::string_view f);

// Names: 1..64 of letters, digits, '.', '_' and '-', not starting with '.' or '-'.
bool is_dataset_name(std::string_view name);

// Reads the archive at `path` and checks it holds a data set of `format`. Returns its file entries.
// invalid_argument with the reason (naming the file) otherwise.
Result<std::vector<TarEntry>> check_dataset_archive(const std::string& path, std::string_view format);

}  // namespace tsum::daemon
