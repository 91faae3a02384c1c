#include "providers/http/codec.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <zlib.h>

#include <cctype>
#include <ctime>

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

namespace {

bool digits(std::string_view s, std::size_t at, std::size_t n, int& out) {
  if (at + n > s.size()) return false;
  out = 0;
  for (std::size_t i = at; i < at + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    out = out * 10 + (s[i] - '0');
  }
  return true;
}

}  // namespace

Result<double> parse_rfc3339(std::string_view s) {
  auto bad = [&] { return make_error(Code::invalid_argument, "not an RFC 3339 time: '" + std::string(s.substr(0, 40)) + "'"); };
  std::tm tm{};
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
  if (!digits(s, 0, 4, y) || s.size() < 20 || s[4] != '-' || !digits(s, 5, 2, mo) || s[7] != '-' || !digits(s, 8, 2, d) ||
      (s[10] != 'T' && s[10] != 't') || !digits(s, 11, 2, h) || s[13] != ':' || !digits(s, 14, 2, mi) || s[16] != ':' ||
      !digits(s, 17, 2, sec) || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
    return bad();
  std::size_t at = 19;
  double fraction = 0;
  if (s[at] == '.') {
    double scale = 0.1;
    for (++at; at < s.size() && s[at] >= '0' && s[at] <= '9'; ++at, scale /= 10) fraction += (s[at] - '0') * scale;
  }
  int offset_s = 0;
  const bool utc = at + 1 == s.size() && (s[at] == 'Z' || s[at] == 'z');
  if (!utc) {
    int oh = 0, om = 0;
    if (at + 6 != s.size() || (s[at] != '+' && s[at] != '-') || !digits(s, at + 1, 2, oh) || s[at + 3] != ':' ||
        !digits(s, at + 4, 2, om))
      return bad();
    offset_s = (s[at] == '-' ? -1 : 1) * (oh * 3600 + om * 60);
  }
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  return static_cast<double>(timegm(&tm)) + fraction - offset_s;
}

}  // namespace tsum::providers::http
