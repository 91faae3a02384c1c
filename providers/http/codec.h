// Encodings the cloud APIs are built from: SHA-256 and HMAC-SHA256 (OpenSSL), hex, base64, gzip, and the
// RFC 3986 percent-encoding of URLs, forms and SigV4. Pure functions, no I/O.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace tsum::providers::http {

// Ordered name/value pairs; names may repeat (query parameters, HTTP headers).
using Fields = std::vector<std::pair<std::string, std::string>>;

std::string sha256_hex(std::string_view data);
std::string hmac_sha256(std::string_view key, std::string_view data);  // raw 32 bytes
std::string hex(std::string_view bytes);                               // lowercase

std::string base64_encode(std::string_view bytes);

// gzip (RFC 1952) of `bytes`, at the best compression; gzip_decompress reverses it (invalid_argument for
// anything that is not one whole gzip stream).
std::string gzip_compress(std::string_view bytes);
Result<std::string> gzip_decompress(std::string_view gz);
// Standard alphabet with padding; invalid_argument for anything else (whitespace included).
Result<std::string> base64_decode(std::string_view text);

// Percent-encodes every byte but the unreserved A-Z a-z 0-9 - _ . ~ (and '/' when keep_slash), with
// uppercase hex digits, as SigV4 and the Query API require.
std::string uri_encode(std::string_view s, bool keep_slash = false);

// Decodes %XX escapes (and '+' as a space when plus_is_space, as HTML forms do). invalid_argument for a
// truncated or non-hex escape.
Result<std::string> percent_decode(std::string_view s, bool plus_is_space = false);

// "a=1&b=&c" -> {a,1},{b,""},{c,""}; empty segments are skipped. Names and values are percent-decoded.
Result<Fields> parse_query(std::string_view raw, bool plus_is_space = false);

// The inverse: uri_encode'd name=value pairs joined by '&', in the given order.
std::string form_encode(const Fields& fields);

// "2024-05-01T12:34:56.789Z" (or with +hh:mm) -> seconds since the epoch; invalid_argument otherwise. The times
// clouds stamp their credentials and tokens with (STS, IMDS, Yandex IAM, GCE, Azure).
Result<double> parse_rfc3339(std::string_view text);

}  // namespace tsum::providers::http
