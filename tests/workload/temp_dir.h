// Test helpers: a self-deleting temporary directory, writers for small IDX, CIFAR and text files, a text check.
#pragma once

#include <ftw.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tsum::workload::testing {

inline bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tsum-workload-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  // Removed with nftw, not std::filesystem::remove_all: PyTorch's pip wheels (2.11 on a GPU machine) export a copy
  // of remove_all that the test binary binds to and that crashes (a call through a null pointer).
  ~TempDir() {
    nftw(path_.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p); }, 16,
         FTW_DEPTH | FTW_PHYS);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline void put_u32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  out.push_back(static_cast<std::uint8_t>(v >> 24));
  out.push_back(static_cast<std::uint8_t>(v >> 16));
  out.push_back(static_cast<std::uint8_t>(v >> 8));
  out.push_back(static_cast<std::uint8_t>(v));
}

// IDX images bytes: header for `count` images of rows x cols, then `payload` bytes (pixel i is
// i % 251), so a payload shorter than count*rows*cols makes a truncated file.
inline std::vector<std::uint8_t> idx_images(std::uint32_t count, std::uint32_t rows,
                                            std::uint32_t cols, std::size_t payload,
                                            std::uint32_t magic = 0x00000803) {
  std::vector<std::uint8_t> out;
  put_u32(out, magic);
  put_u32(out, count);
  put_u32(out, rows);
  put_u32(out, cols);
  for (std::size_t i = 0; i < payload; ++i) out.push_back(static_cast<std::uint8_t>(i % 251));
  return out;
}

// IDX labels bytes: header for `count` labels, then `payload` labels (label i is i % 10).
inline std::vector<std::uint8_t> idx_labels(std::uint32_t count, std::size_t payload,
                                            std::uint32_t magic = 0x00000801) {
  std::vector<std::uint8_t> out;
  put_u32(out, magic);
  put_u32(out, count);
  for (std::size_t i = 0; i < payload; ++i) out.push_back(static_cast<std::uint8_t>(i % 10));
  return out;
}

inline void write_raw(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline void write_gz(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  gzFile gz = gzopen(path.c_str(), "wb");
  if (gz == nullptr) throw std::runtime_error("gzopen failed: " + path);
  if (!bytes.empty()) gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(gz);
}

// CIFAR-10 binary records: record r has label labels[r] and pixel i = (r + i) % 256.
inline std::vector<std::uint8_t> cifar_records(const std::vector<std::uint8_t>& labels) {
  std::vector<std::uint8_t> out;
  for (std::size_t r = 0; r < labels.size(); ++r) {
    out.push_back(labels[r]);
    for (std::size_t i = 0; i < 3072; ++i) out.push_back(static_cast<std::uint8_t>((r + i) % 256));
  }
  return out;
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

inline std::vector<std::uint8_t> read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// A --latency-file (workload/infer/latency_file.h): its header line and its (level, latency_ms) rows.
struct LatencyCsv {
  std::string header;
  std::vector<std::pair<std::string, double>> rows;
};
inline LatencyCsv read_latency_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  LatencyCsv csv;
  std::getline(in, csv.header);
  for (std::string line; std::getline(in, line);) {
    const auto comma = line.find(',');
    if (comma == std::string::npos) throw std::runtime_error(path + ": a row without a comma: " + line);
    csv.rows.emplace_back(line.substr(0, comma), std::stod(line.substr(comma + 1)));
  }
  return csv;
}

}  // namespace tsum::workload::testing
