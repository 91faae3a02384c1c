#include "providers/http/codec.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <zlib.h>

#include <cctype>

namespace tsum::providers::http {

namespace {

bool is_unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
         c == '.' || c == '~';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return hex({reinterpret_cast<const char*>(digest), sizeof digest});
}

std::string hmac_sha256(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
       data.size(), out, &len);
  return {reinterpret_cast<const char*>(out), len};
}

std::string hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

Result<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return make_error(Code::invalid_argument, "base64: length is not a multiple of 4");
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    bool pad_ok = c == '=' && i + 2 >= text.size() && (i + 1 == text.size() || text[i + 1] == '=');
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '/' && !pad_ok)
      return make_error(Code::invalid_argument, "base64: invalid character at offset " + std::to_string(i));
  }
  std::string out(3 * (text.size() / 4), '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return make_error(Code::invalid_argument, "base64: malformed");
  std::size_t pad = text.ends_with("==") ? 2 : text.ends_with("=") ? 1 : 0;
  out.resize(static_cast<std::size_t>(n) - pad);  // EVP_DecodeBlock counts the padding as zero bytes
  return out;
}

std::string uri_encode(std::string_view s, bool keep_slash) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (is_unreserved(c) || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kDigits[c >> 4];
      out += kDigits[c & 15];
    }
  }
  return out;
}

Result<std::string> percent_decode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      int hi = i + 2 < s.size() ? hex_value(s[i + 1]) : -1;
      int lo = i + 2 < s.size() ? hex_value(s[i + 2]) : -1;
      if (hi < 0 || lo < 0)
        return make_error(Code::invalid_argument, "bad percent-escape at offset " + std::to_string(i));
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += plus_is_space && s[i] == '+' ? ' ' : s[i];
    }
  }
  return out;
}

Result<Fields> parse_query(std::string_view raw, bool plus_is_space) {
  Fields out;
  while (!raw.empty()) {
    auto amp = raw.find('&');
    std::string_view pair = raw.substr(0, amp);
    raw = amp == std::string_view::npos ? std::string_view{} : raw.substr(amp + 1);
    if (pair.empty()) continue;
    auto eq = pair.find('=');
    auto name = percent_decode(pair.substr(0, eq), plus_is_space);
    if (!name) return name.error();
    auto value = percent_decode(eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1),
                                plus_is_space);
    if (!value) return value.error();
    out.emplace_back(std::move(*name), std::move(*value));
  }
  return out;
}

std::string form_encode(const Fields& fields) {
  std::string out;
  for (const auto& [name, value] : fields) {
    if (!out.empty()) out += '&';
    out += uri_encode(name);
    out += '=';
    out += uri_encode(value);
  }
  return out;
}

namespace {
constexpr int kGzipWindow = 15 + 16;  // zlib's windowBits for a gzip header and trailer
}  // namespace

std::string gzip_compress(std::string_view bytes) {
  z_stream z{};
  deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, kGzipWindow, 9, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, bytes.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);  // the bound makes one call enough
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

Result<std::string> gzip_decompress(std::string_view gz) {
  z_stream z{};
  if (inflateInit2(&z, kGzipWindow) != Z_OK) return make_error(Code::internal, "zlib: inflateInit2 failed");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  std::string out;
  char buf[16384];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;
  }
  const bool whole = rc == Z_STREAM_END && z.avail_in == 0;
  inflateEnd(&z);
  if (!whole) return make_error(Code::invalid_argument, "not one whole gzip stream");
  return out;
}

}  // namespace tsum::providers::http
