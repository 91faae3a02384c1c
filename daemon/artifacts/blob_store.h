// The room daemon/artifacts/ owns bytes on disk: blobs by content hash, uploaded data sets and their format checks,
// each run's results, and the tar writer. It calls only the store.
//
// BlobStore: immutable files kept by their SHA-256 under <dir>/<hex>. The trainer bundle, data sets and a run's
// results are all blobs; machines fetch them by hash (GET /v1/blobs/{sha256}) and check the hash themselves.
// Adding is atomic (a rename into place) and idempotent: the same bytes are stored once.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace tsum::daemon {

struct BlobInfo {
  std::string sha256;  // lower-case hex
  std::uint64_t bytes = 0;
};

// SHA-256 of a file, read in chunks. not_found / internal naming the file.
Result<BlobInfo> hash_file(const std::string& path);

// True for 64 lower-case hex digits.
bool is_sha256_hex(std::string_view s);

class BlobStore {
 public:
  // Creates dir if needed.
  explicit BlobStore(std::string dir);

  // Hashes `path` and moves it into the store (rename; copy when across file systems). When `expected_sha256`
  // is not empty and differs: invalid_argument naming both hashes, and the file is removed.
  Result<BlobInfo> adopt(const std::string& path, std::string_view expected_sha256 = {});
  // Copies `path` into the store (the original stays).
  Result<BlobInfo> add_copy(const std::string& path);

  bool has(std::string_view sha256) const;
  // Where the blob lives (whether or not it exists); "" for a malformed hash.
  std::string path_of(std::string_view sha256) const;
  // Removes the blob; missing is fine.
  void remove(std::string_view sha256);
  const std::string& dir() const { return dir_; }
  // A fresh path in the store's directory for a file to be adopted (same file system, so adopt is a rename).
  std::string temp_path(std::string_view hint) const;

 private:
  std::string dir_;
};

}  // namespace tsum::daemon
