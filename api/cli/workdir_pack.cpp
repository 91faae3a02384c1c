#include "api/cli/workdir_pack.h"

#include <fnmatch.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "daemon/artifacts/blob_store.h"
#include "daemon/artifacts/tar_archive.h"

namespace tsum::api {

namespace fs = std::filesystem;

IgnoreRules::IgnoreRules(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    while (!line.empty() && line.back() == ' ' && (line.size() < 2 || line[line.size() - 2] != '\\')) line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    Rule r;
    if (line[0] == '!') r.negate = true, line.erase(0, 1);
    else if (line.starts_with("\\!") || line.starts_with("\\#")) line.erase(0, 1);
    if (!line.empty() && line.back() == '/') r.dir_only = true, line.pop_back();
    if (line.starts_with("**/")) line.erase(0, 3);  // at any depth: what an unanchored pattern does
    else if (line.find('/') != std::string::npos) r.anchored = true;
    if (!line.empty() && line[0] == '/') line.erase(0, 1);
    if (line.empty()) continue;
    r.pattern = line;
    rules_.push_back(std::move(r));
  }
}

bool IgnoreRules::ignored(const std::string& rel, bool is_dir) const {
  const std::string base = rel.substr(rel.rfind('/') == std::string::npos ? 0 : rel.rfind('/') + 1);
  bool out = false;
  for (const auto& r : rules_) {
    if (r.dir_only && !is_dir) continue;
    bool hit;
    if (r.anchored) {
      // "**" crosses directories: matched without FNM_PATHNAME, where '*' matches '/' too.
      const bool deep = r.pattern.find("**") != std::string::npos;
      hit = fnmatch(r.pattern.c_str(), rel.c_str(), deep ? 0 : FNM_PATHNAME) == 0;
    } else {
      hit = fnmatch(r.pattern.c_str(), base.c_str(), 0) == 0;
    }
    if (hit) out = !r.negate;
  }
  return out;
}

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string megabytes(std::uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(b) / 1e6);
  return buf;
}

}  // namespace

Result<PackedWorkdir> pack_workdir(const std::string& dir, const std::string& out, std::uint64_t limit_bytes) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return make_error(Code::invalid_argument, "workdir " + dir + " is not a directory");
  const fs::path root(dir);
  std::string rules_text;
  if (fs::exists(root / ".tsumignore", ec)) rules_text = read_text(root / ".tsumignore");
  else if (fs::exists(root / ".gitignore", ec)) rules_text = read_text(root / ".gitignore");
  const IgnoreRules rules(rules_text + "\n.git/\n");

  struct Found {
    std::string rel;
    std::string path;
    std::uint64_t size;
    bool exec;
  };
  std::vector<Found> found;
  std::uint64_t total = 0;
  // Depth first, by hand: a directory left out is not entered.
  std::vector<fs::path> pending{root};  // directories still to read
  while (!pending.empty()) {
    fs::path d = pending.back();
    pending.pop_back();
    fs::directory_iterator it(d, ec), end;
    if (ec) return make_error(Code::invalid_argument, "cannot read " + d.string() + ": " + ec.message());
    for (; it != end; it.increment(ec)) {
      if (ec) return make_error(Code::invalid_argument, "cannot read " + d.string() + ": " + ec.message());
      const fs::path p = it->path();
      const std::string rel = fs::relative(p, root, ec).generic_string();
      struct stat st {};
      if (::stat(p.c_str(), &st) != 0) continue;  // a dangling link
      const bool is_dir = S_ISDIR(st.st_mode);
      if (rules.ignored(rel, is_dir)) continue;
      if (is_dir) {
        if (!fs::is_symlink(p, ec)) pending.push_back(p);
        continue;
      }
      if (!S_ISREG(st.st_mode)) continue;
      found.push_back({rel, p.string(), static_cast<std::uint64_t>(st.st_size), (st.st_mode & 0111) != 0});
      total += static_cast<std::uint64_t>(st.st_size);
    }
  }
  if (total > limit_bytes) {
    std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.size > b.size; });
    std::string largest;
    for (size_t i = 0; i < found.size() && i < 3; ++i)
      largest += (i ? ", " : "") + found[i].rel + " (" + megabytes(found[i].size) + ")";
    return make_error(Code::invalid_argument,
                      "workdir " + dir + " holds " + megabytes(total) + " to upload, over the limit of " +
                          megabytes(limit_bytes) + "; the largest: " + largest +
                          ". Leave files out in its .tsumignore (gitignore patterns), or raise the limit with "
                          "--workdir-limit MB");
  }
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.rel < b.rel; });
  std::vector<daemon::TarMember> members;
  for (const auto& f : found) members.push_back({f.rel, f.path, f.exec});
  if (auto s = daemon::write_tar_gz(out, members); !s) return s.error();
  auto info = daemon::hash_file(out);
  if (!info) return info.error();
  return PackedWorkdir{out, info->sha256, info->bytes, total, found.size()};
}

}  // namespace tsum::api
