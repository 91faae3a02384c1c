// A folder job's folder, packed by the command-line client for upload (POST /v1/workdirs): a gzip tar of its
// files in name order, with fixed times and owners, so the same files give the same bytes and the same sha256
// (the daemon keeps it by that hash, and the client uploads only what the daemon does not have).
//
// What is left out: .git/, and what the folder's .tsumignore says, else its .gitignore (its top-level file only):
// gitignore patterns, one per line: `#` comments, `!` to take a pattern back, a trailing `/` for directories
// only, a `/` anywhere else anchors the pattern at the folder (else it matches a name at any depth), `*`, `?`,
// `[...]` and `**`. The last pattern that matches decides; a directory left out is not looked into. Symbolic
// links are archived as the files they point to; links to directories, sockets and devices are left out.
//
// Why by hand: git's own matcher is not a library Debian ships for C++ (libgit2's needs a repository).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace tsum::api {

struct PackedWorkdir {
  std::string archive;  // the .tar.gz written
  std::string sha256;
  std::uint64_t bytes = 0;       // of the archive
  std::uint64_t file_bytes = 0;  // of the files in it, uncompressed
  std::size_t files = 0;
};

// A gitignore-style list of patterns (the text of a .tsumignore/.gitignore).
class IgnoreRules {
 public:
  explicit IgnoreRules(const std::string& text);
  // `rel`: a path relative to the folder, '/' between parts.
  bool ignored(const std::string& rel, bool is_dir) const;

 private:
  struct Rule {
    std::string pattern;
    bool negate = false, dir_only = false, anchored = false;
  };
  std::vector<Rule> rules_;
};

// Packs `dir` into `out`. invalid_argument when `dir` is not a directory, or when its files come to more than
// `limit_bytes` (the message names the largest and how to leave them out).
Result<PackedWorkdir> pack_workdir(const std::string& dir, const std::string& out, std::uint64_t limit_bytes);

}  // namespace tsum::api
