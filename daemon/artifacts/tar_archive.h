// Reading and writing the tar archives data sets travel in (plain or gzip-compressed: zlib reads both).
// Only what data sets need: regular files and directories, ustar names (prefix + name) and GNU long names.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/result.h"

namespace tsum::daemon {

struct TarEntry {
  std::string name;  // as stored, without a leading "./"
  std::uint64_t size = 0;
  bool is_dir = false;
};

// Reads the archive once, calling `visit` for every regular file with its entry and its first bytes (up to
// `head_bytes`). invalid_argument naming the archive when it is not a tar, is truncated (a member shorter than
// its header says, or no end), or a name is absolute or has "..". Returns every entry.
Result<std::vector<TarEntry>> read_tar(
    const std::string& path, std::size_t head_bytes = 0,
    const std::function<Status(const TarEntry&, const std::string& head)>& visit = nullptr);

// A file to archive: its name in the archive (up to 255 bytes, '/' between directories), where it is on disk,
// and whether it is executable (mode 0755, else 0644).
struct TarMember {
  std::string name;
  std::string path;
  bool executable = false;
};

// Writes `members` into a gzip-compressed tar at `out` (through out.tmp and a rename), in the order given, with
// fixed mtime and owner, so the same files give the same bytes. invalid_argument for a name that does not fit.
Status write_tar_gz(const std::string& out, const std::vector<TarMember>& members);
// The same for `files` (paths on disk), each under its base name.
Status write_tar_gz(const std::string& out, const std::vector<std::string>& files);

}  // namespace tsum::daemon
