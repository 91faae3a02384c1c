#include "workload/data/cifar_data.h"

#include <algorithm>

namespace tsum::workload {
namespace {

std::string join(const std::string& dir, const std::string& name) {
  return dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
}

}  // namespace

std::vector<std::string> cifar_files(const std::string& dir, Split split) {
  if (split == Split::test) return {join(dir, "test_batch.bin")};
  std::vector<std::string> out;
  for (int i = 1; i <= kCifarTrainFiles; ++i) {
    out.push_back(join(dir, "data_batch_" + std::to_string(i) + ".bin"));
  }
  return out;
}

Result<Dataset> load_cifar_dataset(const std::string& dir, Split split, std::int64_t limit) {
  const auto files = cifar_files(dir, split);
  std::vector<std::uint8_t> records;
  for (const auto& path : files) {
    auto batch = read_cifar_batch(path);
    if (!batch.ok()) return batch.error();
    records.insert(records.end(), batch->begin(), batch->end());
  }
  const std::int64_t total = static_cast<std::int64_t>(records.size()) / kCifarRecordBytes;
  const std::int64_t n = limit > 0 ? std::min(limit, total) : total;
  try {
    const torch::Tensor all = torch::from_blob(records.data(), {n, kCifarRecordBytes},
                                               torch::TensorOptions().dtype(torch::kUInt8));
    Dataset out;
    out.labels = all.select(1, 0).to(torch::kInt64);
    out.inputs = all.narrow(1, 1, kCifarPixelBytes)
                     .to(torch::kFloat32)
                     .div_(255.0f)
                     .contiguous()
                     .view({n, 3, kCifarSide, kCifarSide});
    out.inputs_path = files.front();
    out.labels_path = files.front();
    return out;
  } catch (const std::exception& e) {
    return make_error(Code::internal, files.front() + ": cannot build tensors: " + e.what());
  }
}

}  // namespace tsum::workload
