// Helpers the fuzz targets share: the input as text, and a file holding it for readers that take a path.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace tsum::fuzz {

inline std::string_view text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// A file of this process (in /dev/shm when it exists) rewritten with each input; removed at exit.
class InputFile {
 public:
  explicit InputFile(const std::string& suffix) {
    const char* dir = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    path_ = std::string(dir) + "/tsum-fuzz-" + std::to_string(::getpid()) + suffix;
  }
  ~InputFile() { std::remove(path_.c_str()); }
  const std::string& write(const std::uint8_t* data, std::size_t size) {
    std::FILE* f = std::fopen(path_.c_str(), "wb");
    if (f == nullptr) __builtin_trap();
    if (size > 0 && std::fwrite(data, 1, size, f) != size) __builtin_trap();
    std::fclose(f);
    return path_;
  }

 private:
  std::string path_;
};

}  // namespace tsum::fuzz
