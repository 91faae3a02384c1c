#include "daemon/artifacts/tar_archive.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

namespace tsum::daemon {

namespace {

constexpr std::size_t kBlock = 512;

std::uint64_t octal(const char* p, std::size_t n) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n && p[i]; ++i) {
    if (p[i] == ' ') continue;
    if (p[i] < '0' || p[i] > '7') break;
    v = v * 8 + static_cast<std::uint64_t>(p[i] - '0');
  }
  return v;
}

std::string field(const char* p, std::size_t n) { return std::string(p, strnlen(p, n)); }

bool checksum_ok(const unsigned char* h) {
  std::uint64_t stored = octal(reinterpret_cast<const char*>(h) + 148, 8), sum = 0;
  for (std::size_t i = 0; i < kBlock; ++i) sum += (i >= 148 && i < 156) ? ' ' : h[i];
  return sum == stored;
}

bool safe_name(const std::string& n) {
  if (n.empty() || n[0] == '/') return false;
  std::size_t start = 0;
  while (start <= n.size()) {
    auto end = n.find('/', start);
    if (end == std::string::npos) end = n.size();
    if (n.compare(start, end - start, "..") == 0) return false;
    start = end + 1;
  }
  return true;
}

using GzFile = std::unique_ptr<gzFile_s, int (*)(gzFile)>;

// Reads exactly n bytes (n may be 0); false on a short read.
bool read_exact(gzFile f, void* buf, std::size_t n) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    int got = gzread(f, p, static_cast<unsigned>(std::min<std::size_t>(n, 1 << 20)));
    if (got <= 0) return false;
    p += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

}  // namespace

Result<std::vector<TarEntry>> read_tar(const std::string& path, std::size_t head_bytes,
                                       const std::function<Status(const TarEntry&, const std::string&)>& visit) {
  auto bad = [&](const std::string& d) { return make_error(Code::invalid_argument, path + ": " + d); };
  GzFile f(gzopen(path.c_str(), "rb"), gzclose);
  if (!f) return make_error(Code::not_found, "cannot open " + path);
  gzbuffer(f.get(), 1 << 17);
  std::vector<TarEntry> out;
  std::string long_name;
  unsigned char h[kBlock];
  std::vector<char> skip(1 << 16);
  for (;;) {
    if (!read_exact(f.get(), h, kBlock)) return bad("truncated tar archive (no end-of-archive marker)");
    if (std::all_of(h, h + kBlock, [](unsigned char c) { return c == 0; })) break;
    if (!checksum_ok(h)) return bad(out.empty() ? "not a tar archive" : "corrupt tar header after " + out.back().name);
    const char* c = reinterpret_cast<const char*>(h);
    char type = c[156];
    std::uint64_t size = octal(c + 124, 12);
    std::string name = field(c, 100);
    if (std::memcmp(c + 257, "ustar", 5) == 0 && c[345]) name = field(c + 345, 155) + "/" + name;
    if (!long_name.empty()) name = std::move(long_name), long_name.clear();
    std::uint64_t padded = (size + kBlock - 1) / kBlock * kBlock;
    std::string head;
    if (type == 'L') {  // GNU long name: the next entry's name is this member's data
      std::string data(size, '\0');
      if (!read_exact(f.get(), data.data(), size) || !read_exact(f.get(), skip.data(), padded - size))
        return bad("truncated tar archive");
      long_name = field(data.data(), data.size());
      continue;
    }
    while (name.starts_with("./")) name.erase(0, 2);
    bool is_file = type == '0' || type == '\0' || type == '7';
    bool is_dir = type == '5';
    if (!is_file && !is_dir && type != 'x' && type != 'g')
      return bad("entry '" + name + "' is neither a file nor a directory (links are not allowed)");
    if (!name.empty() && !is_dir && !safe_name(name)) return bad("entry name '" + name + "' leaves the archive");
    std::uint64_t left = padded;
    if (is_file && head_bytes > 0) {
      head.resize(std::min<std::uint64_t>(head_bytes, size));
      if (!read_exact(f.get(), head.data(), head.size())) return bad("truncated member " + name);
      left -= head.size();
    }
    while (left > 0) {
      std::size_t n = std::min<std::uint64_t>(left, skip.size());
      if (!read_exact(f.get(), skip.data(), n)) return bad("truncated member " + name);
      left -= n;
    }
    if (type == 'x' || type == 'g' || name.empty()) continue;
    TarEntry e{name, is_dir ? 0 : size, is_dir};
    if (is_file && visit)
      if (auto s = visit(e, head); !s) return s.error();
    out.push_back(std::move(e));
  }
  return out;
}

Status write_tar_gz(const std::string& out, const std::vector<TarMember>& members) {
  GzFile f(gzopen((out + ".tmp").c_str(), "wb6"), gzclose);
  if (!f) return make_error(Code::internal, "cannot write " + out);
  auto put = [&](const void* p, std::size_t n) { return n == 0 || gzwrite(f.get(), p, static_cast<unsigned>(n)) > 0; };
  std::vector<char> buf(1 << 20);
  for (const auto& m : members) {
    std::ifstream in(m.path, std::ios::binary);
    std::error_code ec;
    auto size = std::filesystem::file_size(m.path, ec);
    if (!in || ec) return make_error(Code::not_found, "cannot read " + m.path);
    // ustar: the name's last part in 100 bytes, the directories before it in the 155-byte prefix.
    std::string prefix, name = m.name;
    if (name.size() > 99) {
      size_t cut = name.find('/');  // the first '/' that leaves at most 99 bytes after it
      while (cut != std::string::npos && name.size() - cut - 1 > 99) cut = name.find('/', cut + 1);
      if (cut == std::string::npos || cut > 155)
        return make_error(Code::invalid_argument, "the name " + m.name + " is too long for the archive (255 bytes, 100 after the last '/')");
      prefix = name.substr(0, cut);
      name = name.substr(cut + 1);
    }
    char h[kBlock] = {};
    std::memcpy(h, name.data(), name.size());
    std::snprintf(h + 100, 8, "%07o", m.executable ? 0755 : 0644);
    std::snprintf(h + 108, 8, "%07o", 0);
    std::snprintf(h + 116, 8, "%07o", 0);
    std::snprintf(h + 124, 12, "%011llo", static_cast<unsigned long long>(size));
    std::snprintf(h + 136, 12, "%011o", 0);
    h[156] = '0';
    std::memcpy(h + 257, "ustar\0" "00", 8);
    std::memcpy(h + 345, prefix.data(), prefix.size());
    std::memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (unsigned char ch : h) sum += ch;
    std::snprintf(h + 148, 8, "%06o", sum);
    if (!put(h, kBlock)) return make_error(Code::internal, "write " + out);
    std::uint64_t written = 0;
    while (in) {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      auto n = static_cast<std::size_t>(in.gcount());
      if (n == 0) break;
      if (!put(buf.data(), n)) return make_error(Code::internal, "write " + out);
      written += n;
    }
    if (written != size) return make_error(Code::internal, m.path + " changed while it was archived");
    std::size_t pad = (kBlock - size % kBlock) % kBlock;
    std::memset(buf.data(), 0, kBlock);
    if (!put(buf.data(), pad)) return make_error(Code::internal, "write " + out);
  }
  std::memset(buf.data(), 0, 2 * kBlock);
  if (!put(buf.data(), 2 * kBlock)) return make_error(Code::internal, "write " + out);
  if (gzclose(f.release()) != Z_OK) return make_error(Code::internal, "write " + out);
  std::error_code ec;
  std::filesystem::rename(out + ".tmp", out, ec);
  if (ec) return make_error(Code::internal, "rename " + out + ": " + ec.message());
  return {};
}

Status write_tar_gz(const std::string& out, const std::vector<std::string>& files) {
  std::vector<TarMember> members;
  for (const auto& path : files) {
    std::string name = std::filesystem::path(path).filename().string();
    if (name.size() > 99) return make_error(Code::not_found, "cannot read " + path);
    members.push_back({name, path, false});
  }
  return write_tar_gz(out, members);
}

}  // namespace tsum::daemon
