// Files compiled into the binary (SQL migrations, price catalogs, the agent script) by cmake/Embed.cmake.
#pragma once

#include <span>
#include <string_view>

namespace tsum {

struct EmbeddedFile {
  std::string_view name;  // base name, e.g. "0001_init.sql"
  std::string_view data;
};

inline std::string_view find_embedded(std::span<const EmbeddedFile> files, std::string_view name) {
  for (const auto& f : files)
    if (f.name == name) return f.data;
  return {};
}

}  // namespace tsum
