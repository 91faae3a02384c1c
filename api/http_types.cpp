#include "api/http_types.h"

#include <cctype>

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

}  // namespace

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
