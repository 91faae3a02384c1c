#include "api/http/http_types.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>

namespace tsum::api {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool starts_with_icase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

// "http://host:80/a?b" -> "/a?b"; "http://host" -> "/"; origin-form is returned unchanged.
std::optional<std::string_view> origin_form(std::string_view target) {
  if (!target.empty() && target.front() == '/') return target;
  for (std::string_view scheme : {"http://", "https://"}) {
    if (!starts_with_icase(target, scheme)) continue;
    std::string_view rest = target.substr(scheme.size());
    std::size_t slash = rest.find_first_of("/?");
    if (slash == std::string_view::npos) return std::string_view("/");
    if (rest[slash] == '?') return std::nullopt;  // "http://host?x" has no path; reject rather than guess
    return rest.substr(slash);
  }
  return std::nullopt;
}

Status parse_query(std::string_view raw, std::map<std::string, std::string>& out) {
  while (!raw.empty()) {
    std::size_t amp = raw.find('&');
    std::string_view part = raw.substr(0, amp);
    raw = amp == std::string_view::npos ? std::string_view() : raw.substr(amp + 1);
    if (part.empty()) continue;
    std::size_t eq = part.find('=');
    auto key = percent_decode(part.substr(0, eq), true);
    auto value = percent_decode(eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1), true);
    if (!key || !value) return make_error(Code::invalid_argument, "malformed percent-escape in query");
    out[std::move(*key)] = std::move(*value);
  }
  return {};
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Digits only (no sign, no spaces), fitting in 64 bits.
std::optional<std::uint64_t> parse_u64(std::string_view s) {
  if (s.empty()) return std::nullopt;
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

// A single byte range as written: "A-B", "A-" (last = nullopt) or "-N" (first = nullopt, last = N).
struct ByteRange {
  std::optional<std::uint64_t> first;
  std::optional<std::uint64_t> last;
};

// The one range of a "bytes=..." header; nullopt for anything else (other units, several ranges, junk).
std::optional<ByteRange> parse_single_range(std::string_view header) {
  header = trim(header);
  constexpr std::string_view kUnit = "bytes=";
  if (!starts_with_icase(header, kUnit)) return std::nullopt;
  std::string_view spec = trim(header.substr(kUnit.size()));
  if (spec.find(',') != std::string_view::npos) return std::nullopt;
  std::size_t dash = spec.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  std::string_view a = spec.substr(0, dash);
  std::string_view b = spec.substr(dash + 1);
  ByteRange range;
  if (a.empty()) {
    range.last = parse_u64(b);
    if (!range.last) return std::nullopt;
    return range;
  }
  range.first = parse_u64(a);
  if (!range.first) return std::nullopt;
  if (!b.empty()) {
    range.last = parse_u64(b);
    if (!range.last || *range.last < *range.first) return std::nullopt;
  }
  return range;
}

}  // namespace

Response file_response(const Request& req, const std::string& path, std::string content_type) {
  std::error_code ec;
  const bool regular = std::filesystem::is_regular_file(path, ec);
  const std::uint64_t size = regular ? std::filesystem::file_size(path, ec) : 0;
  if (!regular || ec) return error_response(404, "not_found", "no such file");

  Response res;
  res.content_type = std::move(content_type);
  res.headers.emplace_back("Accept-Ranges", "bytes");
  res.file = FileBody{path, 0, size};
  const std::string header = req.header("Range");
  if (header.empty()) return res;
  auto range = parse_single_range(header);
  if (!range) return res;  // malformed or multi-range: ignored, the whole file

  std::uint64_t first = 0;
  std::uint64_t last = 0;
  bool satisfiable = size > 0;
  if (!range->first) {  // suffix: the last N bytes
    satisfiable = satisfiable && *range->last > 0;
    first = satisfiable ? size - std::min(*range->last, size) : 0;
    last = size - 1;
  } else {
    satisfiable = satisfiable && *range->first < size;
    first = *range->first;
    last = range->last ? std::min(*range->last, size - 1) : size - 1;
  }
  if (!satisfiable) {
    Response refused = error_response(416, "invalid_argument", "range not satisfiable: " + header);
    refused.headers.emplace_back("Accept-Ranges", "bytes");
    refused.headers.emplace_back("Content-Range", "bytes */" + std::to_string(size));
    return refused;
  }
  res.status = 206;
  res.file = FileBody{path, first, last - first + 1};
  res.headers.emplace_back("Content-Range",
                           "bytes " + std::to_string(first) + "-" + std::to_string(last) + "/" + std::to_string(size));
  return res;
}

std::string Request::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (iequals(key, name)) return value;
  }
  return {};
}

Response json_response(int status, const nlohmann::json& body) {
  Response res;
  res.status = status;
  res.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return res;
}

Response error_response(int status, std::string_view code, std::string_view detail) {
  return json_response(status, nlohmann::json{{"error", code}, {"detail", detail}});
}

Response error_response(const Error& error) {
  return error_response(http_status(error.code), code_name(error.code), error.detail);
}

int http_status(Code code) {
  switch (code) {
    case Code::ok: return 200;
    case Code::invalid_argument: return 400;
    case Code::not_found: return 404;
    case Code::already_exists: return 409;
    case Code::cancelled: return 409;
    case Code::unavailable: return 503;
    case Code::timeout: return 504;
    case Code::internal: return 500;
  }
  return 500;
}

std::optional<std::string> percent_decode(std::string_view in, bool plus_as_space) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return std::nullopt;
      int hi = hex_value(in[i + 1]);
      int lo = hex_value(in[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_as_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

Result<ParsedTarget> parse_target(std::string_view target) {
  auto origin = origin_form(target);
  if (!origin) return make_error(Code::invalid_argument, "request target must be an absolute path");
  std::string_view rest = *origin;
  if (std::size_t hash = rest.find('#'); hash != std::string_view::npos) rest = rest.substr(0, hash);

  ParsedTarget parsed;
  std::size_t question = rest.find('?');
  parsed.raw_path = std::string(rest.substr(0, question));
  auto path = percent_decode(parsed.raw_path, false);
  if (!path) return make_error(Code::invalid_argument, "malformed percent-escape in path");
  if (path->find('\0') != std::string::npos) return make_error(Code::invalid_argument, "NUL byte in path");
  parsed.path = std::move(*path);
  if (question != std::string_view::npos) {
    if (Status st = parse_query(rest.substr(question + 1), parsed.query); !st) return st.error();
  }
  return parsed;
}

}  // namespace tsum::api
