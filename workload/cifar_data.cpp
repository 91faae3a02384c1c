#include "workload/cifar_data.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace tsum::workload {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

std::string join(const std::string& dir, const std::string& name) {
  return dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
}

Status check_size(const std::string& path, std::int64_t bytes) {
  if (bytes == 0) return make_error(Code::invalid_argument, path + ": empty file, no records");
  if (bytes % kCifarRecordBytes != 0) {
    return make_error(Code::invalid_argument,
                      path + ": truncated or wrong record size: " + std::to_string(bytes) +
                          " bytes is not a whole number of " + std::to_string(kCifarRecordBytes) +
                          "-byte records (" + std::to_string(bytes / kCifarRecordBytes) +
                          " records and " + std::to_string(bytes % kCifarRecordBytes) + " bytes)");
  }
  return {};
}

Status check_labels(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  for (std::size_t at = 0; at < bytes.size(); at += kCifarRecordBytes) {
    if (bytes[at] >= kCifarClasses) {
      return make_error(Code::invalid_argument,
                        path + ": record " + std::to_string(at / kCifarRecordBytes) +
                            ": bad label byte " + std::to_string(bytes[at]) + " (must be 0..9)");
    }
  }
  return {};
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

Result<std::vector<std::uint8_t>> read_cifar_batch(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return make_error(Code::not_found, path + ": " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) return make_error(Code::invalid_argument, path + ": is a directory");
  if (auto s = check_size(path, st.st_size); !s.ok()) return s.error();
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) return make_error(Code::not_found, path + ": " + std::strerror(errno));
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(st.st_size));
  const std::size_t got = std::fread(bytes.data(), 1, bytes.size(), file.get());
  if (got != bytes.size()) {
    return make_error(Code::invalid_argument, path + ": read " + std::to_string(got) + " of " +
                                                  std::to_string(bytes.size()) + " bytes");
  }
  if (auto s = check_labels(path, bytes); !s.ok()) return s.error();
  return bytes;
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
