#include "daemon/artifacts/blob_store.h"

#include <openssl/evp.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>

namespace tsum::daemon {

namespace fs = std::filesystem;

Result<BlobInfo> hash_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(Code::not_found, "cannot open " + path);
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
    return make_error(Code::internal, "sha256 is not available");
  std::vector<char> buf(1 << 20);
  BlobInfo info;
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    auto n = static_cast<std::size_t>(in.gcount());
    if (n == 0) break;
    EVP_DigestUpdate(ctx.get(), buf.data(), n);
    info.bytes += n;
  }
  if (in.bad()) return make_error(Code::internal, "read error in " + path);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &len);
  static const char* kHex = "0123456789abcdef";
  for (unsigned i = 0; i < len; ++i) {
    info.sha256 += kHex[md[i] >> 4];
    info.sha256 += kHex[md[i] & 15];
  }
  return info;
}

bool is_sha256_hex(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

BlobStore::BlobStore(std::string dir) : dir_(std::move(dir)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
}

std::string BlobStore::path_of(std::string_view sha256) const {
  if (!is_sha256_hex(sha256)) return "";
  return (fs::path(dir_) / std::string(sha256)).string();
}

bool BlobStore::has(std::string_view sha256) const {
  std::error_code ec;
  auto p = path_of(sha256);
  return !p.empty() && fs::is_regular_file(p, ec);
}

std::string BlobStore::temp_path(std::string_view hint) const {
  static std::atomic<unsigned> counter{0};
  std::random_device rd;
  return (fs::path(dir_) / (".tmp-" + std::string(hint) + "-" + std::to_string(rd()) + "-" +
                            std::to_string(counter++)))
      .string();
}

Result<BlobInfo> BlobStore::adopt(const std::string& path, std::string_view expected_sha256) {
  auto info = hash_file(path);
  std::error_code ec;
  if (!info) {
    fs::remove(path, ec);
    return info.error();
  }
  if (!expected_sha256.empty() && info->sha256 != expected_sha256) {
    fs::remove(path, ec);
    return make_error(Code::invalid_argument, "sha256 mismatch: expected " + std::string(expected_sha256) +
                                                  ", the bytes hash to " + info->sha256);
  }
  const std::string target = path_of(info->sha256);
  if (has(info->sha256)) {
    fs::remove(path, ec);
    return info;
  }
  fs::rename(path, target, ec);
  if (ec) {  // another file system: copy next to the target, then rename
    std::string tmp = temp_path("copy");
    fs::copy_file(path, tmp, ec);
    if (!ec) fs::rename(tmp, target, ec);
    if (ec) {
      fs::remove(tmp, ec);
      return make_error(Code::internal, "store " + path + " as " + target + ": " + ec.message());
    }
    fs::remove(path, ec);
  }
  return info;
}

Result<BlobInfo> BlobStore::add_copy(const std::string& path) {
  auto h = hash_file(path);
  if (!h) return h.error();
  if (has(h->sha256)) return *h;  // e.g. the same trainer bundle at every daemon start
  std::string tmp = temp_path("add");
  std::error_code ec;
  fs::copy_file(path, tmp, ec);
  if (ec) return make_error(Code::not_found, "copy " + path + ": " + ec.message());
  return adopt(tmp);
}

void BlobStore::remove(std::string_view sha256) {
  std::error_code ec;
  if (auto p = path_of(sha256); !p.empty()) fs::remove(p, ec);
}

}  // namespace tsum::daemon
