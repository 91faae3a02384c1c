#include "workload/data/cifar_batch.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace tsum::workload {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

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

}  // namespace tsum::workload
