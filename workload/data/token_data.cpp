#include "workload/data/token_data.h"

#include <iterator>

namespace tsum::workload {

std::string token_file(const std::string& dir, Split split) {
  const std::string name = split == Split::train ? "train.txt" : "test.txt";
  return dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
}

Result<Dataset> read_token_file(const std::string& path, std::int64_t limit) {
  auto rows = read_token_rows(path, limit);
  if (!rows.ok()) return rows.error();
  const auto n = std::ssize(rows->labels);
  Dataset out;
  out.inputs = torch::tensor(rows->ids, torch::kInt64).view({n, kSequenceLength});
  out.labels = torch::tensor(rows->labels, torch::kInt64);
  out.vocab = rows->max_id + 1;
  out.inputs_path = path;
  out.labels_path = path;
  return out;
}

Result<Dataset> load_token_dataset(const std::string& dir, Split split, std::int64_t limit) {
  const std::string path = token_file(dir, split);
  try {
    return read_token_file(path, limit);
  } catch (const std::exception& e) {
    return make_error(Code::internal, path + ": cannot build tensors: " + e.what());
  }
}

}  // namespace tsum::workload
