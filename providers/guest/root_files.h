// Files inside a guest's root directory, reached from this host without ever leaving that root: every path
// is resolved by the kernel as if the root were "/" (openat2 RESOLVE_IN_ROOT), so a symbolic link the guest
// made (e.g. /etc/x -> /work/secret, or ../../..) points inside the guest, never at this host's files.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace tsum::providers::guest {

// Whether p is an absolute path without "." or ".." components, NUL, or a trailing '/'.
bool valid_guest_path(std::string_view p);

// Writes content to guest_path under root (replacing a file there), creating missing parent directories
// (mode 0755), then sets the file's mode. invalid_argument for a bad path; internal naming the path otherwise.
Status write_in_root(const std::string& root, std::string_view guest_path, std::string_view content, unsigned mode);

// The whole file. not_found when it does not exist; internal when it cannot be read.
Result<std::string> read_in_root(const std::string& root, std::string_view guest_path);

}  // namespace tsum::providers::guest
