#include "providers/aws/sigv4.h"

#include <algorithm>
#include <ctime>
#include <map>
#include <set>

namespace tsum::providers::aws {

namespace {

constexpr std::string_view kAlgorithm = "AWS4-HMAC-SHA256";
constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// Trims the value and collapses each run of whitespace (line folds included) into one space.
std::string trim_all(std::string_view v) {
  std::string out;
  bool pending_space = false;
  for (char c : v) {
    if (is_space(c)) {
      pending_space = !out.empty();
    } else {
      if (pending_space) out += ' ';
      pending_space = false;
      out += c;
    }
  }
  return out;
}

// RFC 3986 5.2.4 plus collapsing of empty segments, the way AWS SDKs normalize.
std::string remove_dot_segments(std::string_view path) {
  std::vector<std::string_view> kept;
  std::size_t start = 0;
  while (start <= path.size()) {
    auto slash = path.find('/', start);
    std::string_view seg = path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (seg == "..") {
      if (!kept.empty()) kept.pop_back();
    } else if (!seg.empty() && seg != ".") {
      kept.push_back(seg);
    }
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  std::string out = path.starts_with('/') ? "/" : "";
  for (std::size_t i = 0; i < kept.size(); ++i) {
    if (i) out += '/';
    out += kept[i];
  }
  if (path.ends_with('/') && !kept.empty()) out += '/';
  return out;
}

bool is_digits(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool valid_amz_date(std::string_view d) {
  return d.size() == 16 && is_digits(d.substr(0, 8)) && d[8] == 'T' && is_digits(d.substr(9, 6)) && d[15] == 'Z';
}

bool unsigned_header(std::string_view lowercase_name) {
  return lowercase_name == "user-agent" || lowercase_name == "expect" || lowercase_name == "x-amzn-trace-id" ||
         lowercase_name == "authorization";
}

std::string join(const std::vector<std::string>& parts, char sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

}  // namespace

std::string canonical_path(std::string_view path, bool normalize) {
  std::string p = normalize ? remove_dot_segments(path) : std::string(path);
  if (p.empty()) p = "/";
  return uri_encode(p, /*keep_slash=*/true);
}

std::string canonical_query(const Fields& query) {
  std::vector<std::pair<std::string, std::string>> encoded;
  encoded.reserve(query.size());
  for (const auto& [name, value] : query) encoded.emplace_back(uri_encode(name), uri_encode(value));
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [name, value] : encoded) {
    if (!out.empty()) out += '&';
    out += name + "=" + value;
  }
  return out;
}

std::string canonical_request(const SignableRequest& req, const std::vector<std::string>& signed_names,
                              std::string_view payload_hash, bool normalize_path) {
  std::map<std::string, std::vector<std::string>> values;
  for (const auto& n : signed_names) values[n];
  for (const auto& [name, value] : req.headers)
    if (auto it = values.find(lower(name)); it != values.end()) it->second.push_back(trim_all(value));
  std::string headers;
  std::vector<std::string> names;
  for (const auto& [name, vs] : values) {
    headers += name + ":" + join(vs, ',') + "\n";
    names.push_back(name);
  }
  std::string method = req.method;
  std::transform(method.begin(), method.end(), method.begin(), [](char c) { return std::toupper(c); });
  return method + "\n" + canonical_path(req.path, normalize_path) + "\n" + canonical_query(req.query) + "\n" +
         headers + "\n" + join(names, ';') + "\n" + std::string(payload_hash);
}

std::string string_to_sign(std::string_view amz_date, std::string_view scope, std::string_view canonical) {
  return std::string(kAlgorithm) + "\n" + std::string(amz_date) + "\n" + std::string(scope) + "\n" +
         sha256_hex(canonical);
}

std::string signature_of(std::string_view secret, std::string_view scope, std::string_view sts) {
  // scope = date/region/service/aws4_request: each part keys the next HMAC.
  std::string key = "AWS4" + std::string(secret);
  std::size_t start = 0;
  while (start < scope.size()) {
    auto slash = scope.find('/', start);
    key = hmac_sha256(key, scope.substr(start, slash == std::string_view::npos ? std::string_view::npos
                                                                               : slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return hex(hmac_sha256(key, sts));
}

Result<SignedRequest> sign(const SignableRequest& req, const Credentials& creds, const SignOptions& opts) {
  if (creds.access_key_id.empty() || creds.secret_access_key.empty())
    return make_error(Code::invalid_argument, "sigv4: missing access key id or secret access key");
  if (opts.region.empty() || opts.service.empty())
    return make_error(Code::invalid_argument, "sigv4: missing region or service");
  if (!valid_amz_date(opts.amz_date))
    return make_error(Code::invalid_argument, "sigv4: amz_date '" + opts.amz_date + "' is not YYYYMMDDTHHMMSSZ");
  if (creds.access_key_id.find('/') != std::string::npos)
    return make_error(Code::invalid_argument, "sigv4: access key id contains '/'");

  const bool with_token = !creds.session_token.empty();
  const bool with_content_hash = opts.add_content_sha256 || opts.unsigned_payload;
  SignableRequest signing = req;
  std::string payload_hash;
  signing.headers.clear();
  for (const auto& [name, value] : req.headers) {
    std::string n = lower(name);
    if (n == "authorization" || n == "x-amz-date" || (with_token && n == "x-amz-security-token")) continue;
    if (n == "x-amz-content-sha256") {
      if (with_content_hash) continue;
      payload_hash = value;  // the caller chose the payload hash
    }
    signing.headers.emplace_back(name, value);
  }
  if (opts.unsigned_payload) payload_hash = kUnsignedPayload;
  else if (payload_hash.empty()) payload_hash = sha256_hex(req.body);

  SignedRequest out;
  out.added_headers.emplace_back("X-Amz-Date", opts.amz_date);
  if (with_content_hash) out.added_headers.emplace_back("X-Amz-Content-SHA256", payload_hash);
  if (with_token && !opts.omit_session_token) out.added_headers.emplace_back("X-Amz-Security-Token", creds.session_token);
  signing.headers.insert(signing.headers.end(), out.added_headers.begin(), out.added_headers.end());

  std::set<std::string> names;
  for (const auto& [name, _] : signing.headers)
    if (std::string n = lower(name); !unsigned_header(n)) names.insert(n);
  if (!names.count("host")) return make_error(Code::invalid_argument, "sigv4: the request has no host header");
  std::vector<std::string> signed_names(names.begin(), names.end());

  std::string scope = opts.amz_date.substr(0, 8) + "/" + opts.region + "/" + opts.service + "/aws4_request";
  out.canonical_request = canonical_request(signing, signed_names, payload_hash, opts.normalize_path);
  out.string_to_sign = string_to_sign(opts.amz_date, scope, out.canonical_request);
  out.signature = signature_of(creds.secret_access_key, scope, out.string_to_sign);
  out.authorization = std::string(kAlgorithm) + " Credential=" + creds.access_key_id + "/" + scope +
                      ", SignedHeaders=" + join(signed_names, ';') + ", Signature=" + out.signature;
  if (with_token && opts.omit_session_token) out.added_headers.emplace_back("X-Amz-Security-Token", creds.session_token);
  out.added_headers.emplace_back("Authorization", out.authorization);
  return out;
}

std::string amz_date(std::chrono::system_clock::time_point t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[17];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

Result<std::chrono::system_clock::time_point> parse_amz_date(std::string_view s) {
  if (!valid_amz_date(s)) return make_error(Code::invalid_argument, "'" + std::string(s) + "' is not YYYYMMDDTHHMMSSZ");
  auto num = [&](std::size_t pos, std::size_t len) { return std::stoi(std::string(s.substr(pos, len))); };
  std::tm tm{};
  tm.tm_year = num(0, 4) - 1900;
  tm.tm_mon = num(4, 2) - 1;
  tm.tm_mday = num(6, 2);
  tm.tm_hour = num(9, 2);
  tm.tm_min = num(11, 2);
  tm.tm_sec = num(13, 2);
  if (tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
    return make_error(Code::invalid_argument, "'" + std::string(s) + "' is not a valid date and time");
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

Result<AuthorizationHeader> parse_authorization(std::string_view value) {
  auto bad = [&](const std::string& why) {
    return make_error(Code::invalid_argument, "authorization header: " + why);
  };
  if (!value.starts_with(kAlgorithm) || value.size() == kAlgorithm.size() || value[kAlgorithm.size()] != ' ')
    return bad("not AWS4-HMAC-SHA256");
  value.remove_prefix(kAlgorithm.size() + 1);
  AuthorizationHeader out;
  std::string credential, signed_headers;
  while (!value.empty()) {
    auto comma = value.find(',');
    std::string_view part = value.substr(0, comma);
    value = comma == std::string_view::npos ? std::string_view{} : value.substr(comma + 1);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    auto eq = part.find('=');
    if (eq == std::string_view::npos) return bad("component without '='");
    std::string_view key = part.substr(0, eq), val = part.substr(eq + 1);
    if (key == "Credential") credential = val;
    else if (key == "SignedHeaders") signed_headers = val;
    else if (key == "Signature") out.signature = val;
    else return bad("unknown component '" + std::string(key) + "'");
  }
  if (credential.empty() || signed_headers.empty() || out.signature.empty())
    return bad("needs Credential, SignedHeaders and Signature");
  std::vector<std::string> parts;
  for (std::size_t start = 0;;) {
    auto slash = credential.find('/', start);
    parts.push_back(credential.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  if (parts.size() != 5 || parts[4] != "aws4_request" || parts[1].size() != 8 || !is_digits(parts[1]))
    return bad("Credential is not KEY/YYYYMMDD/REGION/SERVICE/aws4_request");
  out.access_key_id = parts[0];
  out.date = parts[1];
  out.region = parts[2];
  out.service = parts[3];
  out.scope = parts[1] + "/" + parts[2] + "/" + parts[3] + "/aws4_request";
  for (std::size_t start = 0;;) {
    auto semi = signed_headers.find(';', start);
    out.signed_headers.push_back(signed_headers.substr(start, semi == std::string::npos ? std::string::npos : semi - start));
    if (semi == std::string::npos) break;
    start = semi + 1;
  }
  return out;
}

}  // namespace tsum::providers::aws
