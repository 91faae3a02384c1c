// Reader for the CIFAR-10 binary format ("CIFAR-10 binary version" from the data set's authors).
//
// A data directory holds data_batch_1.bin .. data_batch_5.bin (the training split, in that order)
// and test_batch.bin (the test split). Each file is a sequence of 3073-byte records: one label byte
// (0..9) then 3072 pixel bytes, the 32x32 red, green and blue planes in turn, each row-major.
//
// Every failure is an Error whose detail starts with the file path and says what is wrong:
//   not_found        the file does not exist
//   invalid_argument a directory, an empty file, a size that is not a whole number of records
//                    (truncated, or records of another size), a label byte above 9
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "workload/data/cifar_batch.h"
#include "workload/data/dataset.h"

namespace tsum::workload {

// The files of one split in `dir`, in reading order.
std::vector<std::string> cifar_files(const std::string& dir, Split split);

// The split's files concatenated; the first `limit` records (all when limit <= 0), images x/255 as
// float32 [N, 3, 32, 32].
Result<Dataset> load_cifar_dataset(const std::string& dir, Split split, std::int64_t limit);

}  // namespace tsum::workload
