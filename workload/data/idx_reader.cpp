#include "workload/data/idx_reader.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

namespace tsum::workload {
namespace {

// A byte source over either a raw file or a gzip stream, chosen by the first two bytes.
class ByteSource {
 public:
  ByteSource() = default;
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;
  ~ByteSource() {
    if (gz_ != nullptr) gzclose(gz_);
    if (file_ != nullptr) std::fclose(file_);
  }

  Status open(const std::string& path) {
    path_ = path;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      return make_error(Code::not_found, path + ": " + std::strerror(errno));
    }
    if (S_ISDIR(st.st_mode)) return make_error(Code::invalid_argument, path + ": is a directory");
    file_ = std::fopen(path.c_str(), "rb");
    if (file_ == nullptr) return make_error(Code::not_found, path + ": " + std::strerror(errno));
    unsigned char magic[2] = {0, 0};
    const std::size_t n = std::fread(magic, 1, 2, file_);
    const bool gzipped = n == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    if (!gzipped) {
      std::rewind(file_);
      return {};
    }
    std::fclose(file_);
    file_ = nullptr;
    gz_ = gzopen(path.c_str(), "rb");
    if (gz_ == nullptr) return make_error(Code::not_found, path + ": cannot open gzip stream");
    gzbuffer(gz_, 1 << 18);
    return {};
  }

  // Reads up to n bytes into dst; returns how many were read, or an error for a corrupt stream.
  Result<std::size_t> read(void* dst, std::size_t n) {
    auto* out = static_cast<unsigned char*>(dst);
    std::size_t total = 0;
    while (total < n) {
      const std::size_t chunk = std::min<std::size_t>(n - total, 1u << 30);
      if (gz_ != nullptr) {
        const int got = gzread(gz_, out + total, static_cast<unsigned>(chunk));
        if (got < 0) {
          int errnum = 0;
          const char* msg = gzerror(gz_, &errnum);
          if (errnum == Z_BUF_ERROR) break;  // stream ends early: the caller reports truncation
          return make_error(Code::invalid_argument,
                            path_ + ": corrupt gzip data: " + (msg != nullptr ? msg : "unknown"));
        }
        if (got == 0) break;
        total += static_cast<std::size_t>(got);
      } else {
        const std::size_t got = std::fread(out + total, 1, chunk, file_);
        if (got == 0) {
          if (std::ferror(file_)) return make_error(Code::invalid_argument, path_ + ": read error");
          break;
        }
        total += got;
      }
    }
    return total;
  }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  gzFile gz_ = nullptr;
};

std::uint32_t big_endian_u32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

std::string hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// Reads the magic and `dims` dimensions; checks the magic against `expected`.
Result<std::vector<std::int64_t>> read_header(ByteSource& src, const std::string& path,
                                              std::uint32_t expected, int dims, const char* kind) {
  const std::size_t header_bytes = 4 * static_cast<std::size_t>(1 + dims);
  unsigned char buf[16] = {};
  auto got = src.read(buf, header_bytes);
  if (!got.ok()) return got.error();
  if (*got < 4) {
    return make_error(Code::invalid_argument,
                      path + ": truncated: file has " + std::to_string(*got) +
                          " bytes, too short for the IDX magic number");
  }
  const std::uint32_t magic = big_endian_u32(buf);
  if (magic != expected) {
    return make_error(Code::invalid_argument, path + ": wrong magic " + hex32(magic) +
                                                  " (expected " + hex32(expected) + " for IDX " +
                                                  kind + ")");
  }
  if (*got < header_bytes) {
    return make_error(Code::invalid_argument,
                      path + ": truncated: file has " + std::to_string(*got) + " bytes, the IDX " +
                          kind + " header needs " + std::to_string(header_bytes));
  }
  std::vector<std::int64_t> out;
  for (int i = 0; i < dims; ++i) out.push_back(big_endian_u32(buf + 4 * (1 + i)));
  return out;
}

// Reads up to `need` payload bytes, growing the buffer as data arrives so that a header promising
// more than the file holds costs only what the file holds. A short result means truncation.
Result<std::vector<std::uint8_t>> read_payload(ByteSource& src, std::uint64_t need) {
  constexpr std::uint64_t kChunk = 16u << 20;
  constexpr std::uint64_t kReserveCap = 256u << 20;
  std::vector<std::uint8_t> out;
  out.reserve(static_cast<std::size_t>(std::min(need, kReserveCap)));
  while (out.size() < need) {
    const std::size_t old = out.size();
    const auto chunk = static_cast<std::size_t>(std::min<std::uint64_t>(need - old, kChunk));
    out.resize(old + chunk);
    auto got = src.read(out.data() + old, chunk);
    if (!got.ok()) return got.error();
    out.resize(old + *got);
    if (*got < chunk) break;
  }
  return out;
}

}  // namespace

Result<IdxImages> read_idx_images(const std::string& path, std::int64_t max_count) {
  ByteSource src;
  if (auto st = src.open(path); !st.ok()) return st.error();
  auto dims = read_header(src, path, kIdxImagesMagic, 3, "images");
  if (!dims.ok()) return dims.error();
  IdxImages out;
  out.declared = (*dims)[0];
  out.count = max_count > 0 ? std::min<std::int64_t>(out.declared, max_count) : out.declared;
  out.rows = (*dims)[1];
  out.cols = (*dims)[2];
  if (out.rows == 0 || out.cols == 0) {
    return make_error(Code::invalid_argument,
                      path + ": bad header: images of " + std::to_string(out.rows) + "x" +
                          std::to_string(out.cols));
  }
  // Each dimension is < 2^32, so the product fits in 128 bits; more than 2^63 bytes is nonsense.
  const unsigned __int128 bytes = static_cast<unsigned __int128>(out.count) *
                                  static_cast<unsigned __int128>(out.rows) *
                                  static_cast<unsigned __int128>(out.cols);
  if (bytes > static_cast<unsigned __int128>(std::numeric_limits<std::int64_t>::max())) {
    return make_error(Code::invalid_argument, path + ": bad header: " + std::to_string(out.count) +
                                                  " images of " + std::to_string(out.rows) + "x" +
                                                  std::to_string(out.cols) + " is too large");
  }
  const auto need = static_cast<std::uint64_t>(bytes);
  auto payload = read_payload(src, need);
  if (!payload.ok()) return payload.error();
  out.pixels = std::move(*payload);
  if (out.pixels.size() < need) {
    return make_error(Code::invalid_argument,
                      path + ": truncated: header says " + std::to_string(out.declared) +
                          " images of " + std::to_string(out.rows) + "x" +
                          std::to_string(out.cols) + " (" +
                          (out.count < out.declared ? "the first " + std::to_string(out.count) + ": "
                                                    : std::string()) +
                          std::to_string(need) + " bytes), file has " +
                          std::to_string(out.pixels.size()) + " bytes after the header");
  }
  return out;
}

Result<IdxLabels> read_idx_labels(const std::string& path, std::int64_t max_count) {
  ByteSource src;
  if (auto st = src.open(path); !st.ok()) return st.error();
  auto dims = read_header(src, path, kIdxLabelsMagic, 1, "labels");
  if (!dims.ok()) return dims.error();
  IdxLabels out;
  out.declared = (*dims)[0];
  out.count = max_count > 0 ? std::min<std::int64_t>(out.declared, max_count) : out.declared;
  const auto need = static_cast<std::uint64_t>(out.count);
  auto payload = read_payload(src, need);
  if (!payload.ok()) return payload.error();
  out.labels = std::move(*payload);
  if (out.labels.size() < need) {
    return make_error(Code::invalid_argument,
                      path + ": truncated: header says " + std::to_string(out.declared) +
                          " labels, the first " + std::to_string(out.count) + " need " +
                          std::to_string(need) + " bytes, file has " +
                          std::to_string(out.labels.size()) + " bytes after the header");
  }
  return out;
}

}  // namespace tsum::workload
