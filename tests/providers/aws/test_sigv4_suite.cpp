// SigV4 against the official AWS signing test suite (aws-c-auth's v4 cases), read from the shared test data
// directory; every case with header-signing expectations must match byte for byte.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "providers/aws/sigv4.h"

using namespace tsum;
using namespace tsum::providers::aws;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot read " << p);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Parses the suite's raw request: request line, headers (indented lines continue the previous value),
// blank line, body.
SignableRequest parse_request(const std::string& text) {
  SignableRequest req;
  std::size_t pos = text.find('\n');
  std::string line = text.substr(0, pos);
  auto first = line.find(' '), last = line.rfind(' ');
  REQUIRE(first != std::string::npos);
  REQUIRE(last > first);
  req.method = line.substr(0, first);
  std::string target = line.substr(first + 1, last - first - 1);
  auto q = target.find('?');
  req.path = target.substr(0, q);
  if (q != std::string::npos) {
    auto query = parse_query(target.substr(q + 1));
    REQUIRE(query.ok());
    req.query = *query;
  }
  while (pos != std::string::npos) {
    std::size_t start = pos + 1;
    pos = text.find('\n', start);
    line = text.substr(start, pos == std::string::npos ? std::string::npos : pos - start);
    if (line.empty()) {
      if (pos != std::string::npos) req.body = text.substr(pos + 1);
      break;
    }
    if (line[0] == ' ' || line[0] == '\t') {
      REQUIRE_FALSE(req.headers.empty());
      req.headers.back().second += "\n" + line;
      continue;
    }
    auto colon = line.find(':');
    REQUIRE(colon != std::string::npos);
    req.headers.emplace_back(line.substr(0, colon), line.substr(colon + 1));
  }
  return req;
}

std::string authorization_line(const std::string& signed_request) {
  auto at = signed_request.find("\nAuthorization:");
  REQUIRE(at != std::string::npos);
  auto start = at + std::string("\nAuthorization:").size();
  return signed_request.substr(start, signed_request.find('\n', start) - start);
}

}  // namespace

TEST_CASE("SigV4 header signing matches every case of the AWS test suite") {
  const fs::path suite = fs::path(TSUM_SHARED_DIR) / "testdata" / "aws-sigv4";
  REQUIRE_MESSAGE(fs::is_directory(suite), "the AWS SigV4 test suite is missing: " << suite
                                               << " (configure with -DTSUM_SHARED_DIR=<dir holding testdata/>)");
  int cases = 0;
  for (const auto& entry : fs::directory_iterator(suite)) {
    if (!fs::exists(entry.path() / "header-canonical-request.txt")) continue;
    ++cases;
    const fs::path dir = entry.path();
    CAPTURE(dir.filename().string());
    auto ctx = nlohmann::json::parse(slurp(dir / "context.json"));
    const auto& c = ctx["credentials"];
    Credentials creds{c["access_key_id"], c["secret_access_key"], c.value("token", "")};
    std::string stamp = ctx["timestamp"];  // 2015-08-30T12:36:00Z
    std::erase_if(stamp, [](char ch) { return ch == '-' || ch == ':'; });
    auto when = parse_amz_date(stamp);
    REQUIRE(when.ok());
    SignOptions opts{.region = ctx["region"], .service = ctx["service"], .amz_date = amz_date(*when),
                     .normalize_path = ctx["normalize"], .add_content_sha256 = ctx["sign_body"],
                     .omit_session_token = ctx.value("omit_session_token", false)};
    auto req = parse_request(slurp(dir / "request.txt"));
    auto s = sign(req, creds, opts);
    REQUIRE_MESSAGE(s.ok(), s.error().detail);
    CHECK(s->canonical_request == slurp(dir / "header-canonical-request.txt"));
    CHECK(s->string_to_sign == slurp(dir / "header-string-to-sign.txt"));
    CHECK(s->signature == slurp(dir / "header-signature.txt"));
    CHECK(s->authorization == authorization_line(slurp(dir / "header-signed-request.txt")));
  }
  CHECK(cases == 38);
}

TEST_CASE("SigV4 refuses what it cannot sign, naming the problem") {
  SignableRequest req{.method = "GET", .path = "/", .headers = {{"Host", "example.amazonaws.com"}}};
  Credentials creds{"AKID", "secret", ""};
  SignOptions opts{.region = "us-east-1", .service = "ec2", .amz_date = "20240101T000000Z"};
  CHECK(sign(req, creds, opts).ok());
  auto no_host = req;
  no_host.headers.clear();
  CHECK(sign(no_host, creds, opts).error().detail.find("no host header") != std::string::npos);
  auto bad_date = opts;
  bad_date.amz_date = "2024-01-01";
  CHECK(sign(req, creds, bad_date).code() == Code::invalid_argument);
  CHECK(sign(req, Credentials{"", "x", ""}, opts).code() == Code::invalid_argument);
  CHECK_FALSE(parse_amz_date("20241301T000000Z").ok());
}

TEST_CASE("the Authorization header parses back into its parts") {
  auto a = parse_authorization(
      "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
      "SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
  REQUIRE(a.ok());
  CHECK(a->access_key_id == "AKIDEXAMPLE");
  CHECK(a->scope == "20150830/us-east-1/service/aws4_request");
  CHECK(a->signed_headers == std::vector<std::string>{"host", "x-amz-date"});
  CHECK_FALSE(parse_authorization("AWS4-HMAC-SHA256 Credential=AK/2015/x/y/z, SignedHeaders=host, Signature=0").ok());
  CHECK_FALSE(parse_authorization("Bearer abc").ok());
}

TEST_CASE("codec: base64 and percent-encoding round-trip and reject garbage") {
  for (std::string s : std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)}) {
    auto back = base64_decode(base64_encode(s));
    REQUIRE(back.ok());
    CHECK(*back == s);
  }
  CHECK_FALSE(base64_decode("abc").ok());
  CHECK_FALSE(base64_decode("ab!=").ok());
  CHECK(uri_encode("a b/ü~") == "a%20b%2F%C3%BC~");
  CHECK(uri_encode("a b/", true) == "a%20b/");
  CHECK(*percent_decode("a%20b+c", true) == "a b c");
  CHECK_FALSE(percent_decode("%2").ok());
  CHECK_FALSE(percent_decode("%zz").ok());
  auto q = parse_query("b=2&a&&c=%3D");
  REQUIRE(q.ok());
  CHECK(*q == Fields{{"b", "2"}, {"a", ""}, {"c", "="}});
}
