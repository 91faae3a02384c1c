// What a guest's cloud-init does with our #cloud-config user data (cloud_init/cloud_init.h), read with yaml-cpp:
//   - the user data must start with a "#cloud-config" line and be a YAML mapping;
//   - write_files: each entry's path (absolute, no ".."), content (plain, or encoding b64/base64, or
//     gz+b64/gzip+base64) and permissions (octal string, default 0644); owner and other entry keys are
//     skipped, by name;
//   - runcmd: each entry a list (the argv) or a string (run with /bin/sh -c), in order;
//   - packages: a list of package names (letters, digits, '.', '+', '-'), which the guest's image must already
//     have (a fake guest reaches no mirror); package_update is then moot;
//   - every other top-level key is skipped, by name.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tsum::providers::fake_guest {

// One file of write_files, decoded; its path as the user data names it.
struct GuestFile {
  std::string path;
  std::string content;
  unsigned permissions = 0644;
};

// What the guest does with a #cloud-config document.
struct CloudConfig {
  std::vector<GuestFile> files;
  std::vector<std::vector<std::string>> runcmd;  // argv of each command, in order
  std::vector<std::string> packages;             // what cloud-init would apt-get install
  std::vector<std::string> skipped;              // keys the guest cannot do, e.g. "packages"
};

// invalid_argument naming what is wrong: no #cloud-config header, YAML that does not parse, a document that
// is not a mapping, a write_files entry without an absolute path (or with a ".." in it), bad permissions,
// an unknown encoding or bad base64, a runcmd entry that is neither a string nor a list of strings, a package
// that is not a plain name.
Result<CloudConfig> parse_cloud_config(std::string_view user_data);

}  // namespace tsum::providers::fake_guest
