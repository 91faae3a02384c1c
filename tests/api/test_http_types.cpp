#include <doctest/doctest.h>

#include <boost/beast/core/string.hpp>

#include <fstream>

#include "api/http/http_types.h"
#include "support/temp_dir.h"

using namespace tsum;
using namespace tsum::api;

namespace {

// First header of `res` named `name` (case-insensitive), "" if absent.
std::string header_of(const Response& res, std::string_view name) {
  for (const auto& [k, v] : res.headers) {
    if (boost::beast::iequals(k, name)) return v;
  }
  return {};
}

}  // namespace

TEST_CASE("percent_decode") {
  CHECK(percent_decode("a%20b%2Fc", false) == "a b/c");
  CHECK(percent_decode("a+b", false) == "a+b");
  CHECK(percent_decode("a+b", true) == "a b");
  CHECK(percent_decode("%41%6a", false) == "Aj");
  CHECK(percent_decode("", false) == "");
  CHECK_FALSE(percent_decode("%", false).has_value());
  CHECK_FALSE(percent_decode("%4", false).has_value());
  CHECK_FALSE(percent_decode("%zz", false).has_value());
  CHECK_FALSE(percent_decode("abc%", true).has_value());
}

TEST_CASE("parse_target: origin form, query, duplicates") {
  auto t = parse_target("/v1/runs/5?x=1&y=a+b&z=%26&flag&&x=2");
  REQUIRE(t.ok());
  CHECK(t->raw_path == "/v1/runs/5");
  CHECK(t->path == "/v1/runs/5");
  CHECK(t->query.at("x") == "2");  // last one wins
  CHECK(t->query.at("y") == "a b");
  CHECK(t->query.at("z") == "&");
  CHECK(t->query.at("flag") == "");
  CHECK(t->query.size() == 4);

  auto encoded = parse_target("/a%20b/c+d");
  REQUIRE(encoded.ok());
  CHECK(encoded->raw_path == "/a%20b/c+d");
  CHECK(encoded->path == "/a b/c+d");
  CHECK(encoded->query.empty());

  auto with_fragment = parse_target("/x#frag");
  REQUIRE(with_fragment.ok());
  CHECK(with_fragment->path == "/x");
}

TEST_CASE("parse_target: absolute form") {
  auto t = parse_target("http://example.com:8080/v1/runs?limit=3");
  REQUIRE(t.ok());
  CHECK(t->path == "/v1/runs");
  CHECK(t->query.at("limit") == "3");
  auto bare = parse_target("HTTP://example.com");
  REQUIRE(bare.ok());
  CHECK(bare->path == "/");
}

TEST_CASE("parse_target: rejects bad targets") {
  CHECK(parse_target("").code() == Code::invalid_argument);
  CHECK(parse_target("*").code() == Code::invalid_argument);
  CHECK(parse_target("v1/runs").code() == Code::invalid_argument);
  CHECK(parse_target("/a%zz").code() == Code::invalid_argument);
  CHECK(parse_target("/a?x=%g0").code() == Code::invalid_argument);
  CHECK(parse_target("/a%00b").code() == Code::invalid_argument);
  CHECK(parse_target("ftp://host/x").code() == Code::invalid_argument);
}

TEST_CASE("Request::header is case-insensitive") {
  Request req;
  req.headers = {{"Content-Type", "text/plain"}, {"X-Twice", "1"}, {"x-twice", "2"}};
  CHECK(req.header("content-type") == "text/plain");
  CHECK(req.header("CONTENT-TYPE") == "text/plain");
  CHECK(req.header("x-twice") == "1");
  CHECK(req.header("missing") == "");
}

TEST_CASE("json_response and error_response") {
  Response ok = json_response(201, {{"id", 5}});
  CHECK(ok.status == 201);
  CHECK(ok.content_type == "application/json");
  CHECK(nlohmann::json::parse(ok.body) == nlohmann::json{{"id", 5}});

  Response err = error_response(404, "not_found", "no run 5");
  CHECK(err.status == 404);
  auto body = nlohmann::json::parse(err.body);
  CHECK(body["error"] == "not_found");
  CHECK(body["detail"] == "no run 5");

  Response from_error = error_response(make_error(Code::unavailable, "db down"));
  CHECK(from_error.status == 503);
  CHECK(nlohmann::json::parse(from_error.body)["error"] == "unavailable");

  // Invalid UTF-8 must not throw.
  Response bad_utf8 = error_response(400, "invalid_argument", std::string("bad \xff byte"));
  CHECK(bad_utf8.status == 400);
  CHECK_FALSE(nlohmann::json::parse(bad_utf8.body, nullptr, false).is_discarded());
}

TEST_CASE("http_status maps every code") {
  CHECK(http_status(Code::ok) == 200);
  CHECK(http_status(Code::invalid_argument) == 400);
  CHECK(http_status(Code::not_found) == 404);
  CHECK(http_status(Code::already_exists) == 409);
  CHECK(http_status(Code::cancelled) == 409);
  CHECK(http_status(Code::unavailable) == 503);
  CHECK(http_status(Code::timeout) == 504);
  CHECK(http_status(Code::internal) == 500);
}

TEST_CASE("file_response: whole file, single ranges, 416, ignored ranges, 404") {
  tsum::testing::TempDir dir;
  const std::string path = dir.file("data.bin");
  std::ofstream(path) << "0123456789";  // 10 bytes
  auto with_range = [&](std::string range) {
    Request req;
    if (!range.empty()) req.headers.emplace_back("range", range);
    return file_response(req, path, "application/octet-stream");
  };
  auto check_range = [&](const std::string& header, std::uint64_t offset, std::uint64_t length, std::string cr) {
    CAPTURE(header);
    Response res = with_range(header);
    CHECK(res.status == 206);
    REQUIRE(res.file);
    CHECK(res.file->path == path);
    CHECK(res.file->offset == offset);
    CHECK(res.file->length == length);
    CHECK(header_of(res, "Content-Range") == cr);
    CHECK(header_of(res, "Accept-Ranges") == "bytes");
  };

  Response whole = with_range("");
  CHECK(whole.status == 200);
  CHECK(whole.content_type == "application/octet-stream");
  REQUIRE(whole.file);
  CHECK(whole.file->offset == 0);
  CHECK(whole.file->length == 10);
  CHECK(header_of(whole, "Accept-Ranges") == "bytes");
  CHECK(header_of(whole, "Content-Range") == "");

  check_range("bytes=2-5", 2, 4, "bytes 2-5/10");
  check_range("bytes=0-0", 0, 1, "bytes 0-0/10");
  check_range("bytes=7-", 7, 3, "bytes 7-9/10");
  check_range("bytes=3-100", 3, 7, "bytes 3-9/10");  // the end is clamped
  check_range("bytes=-4", 6, 4, "bytes 6-9/10");
  check_range("bytes=-50", 0, 10, "bytes 0-9/10");   // a suffix longer than the file: all of it
  check_range(" Bytes=9-9 ", 9, 1, "bytes 9-9/10");  // the unit is case-insensitive

  for (std::string unsatisfiable : {"bytes=10-", "bytes=10-20", "bytes=-0", "bytes=99-"}) {
    CAPTURE(unsatisfiable);
    Response res = with_range(unsatisfiable);
    CHECK(res.status == 416);
    CHECK_FALSE(res.file);
    CHECK(header_of(res, "Content-Range") == "bytes */10");
    CHECK(header_of(res, "Accept-Ranges") == "bytes");
  }
  for (std::string ignored : {"bytes=0-1,4-5", "bytes=5-2", "bytes=a-b", "bytes=--3", "items=0-1", "bytes=",
                              "bytes=1", "bytes=+1-2", "bytes = 1-2", "bytes=99999999999999999999999-"}) {
    CAPTURE(ignored);
    Response res = with_range(ignored);
    CHECK(res.status == 200);
    REQUIRE(res.file);
    CHECK(res.file->offset == 0);
    CHECK(res.file->length == 10);
  }

  std::ofstream(dir.file("empty"));
  Request req;
  CHECK(file_response(req, dir.file("empty"), "text/plain").file->length == 0);
  req.headers.emplace_back("Range", "bytes=0-");
  CHECK(file_response(req, dir.file("empty"), "text/plain").status == 416);

  Response missing = file_response(Request{}, dir.file("nope"), "text/plain");
  CHECK(missing.status == 404);
  CHECK(nlohmann::json::parse(missing.body)["error"] == "not_found");
  CHECK_FALSE(missing.file);
  CHECK(file_response(Request{}, dir.path().string(), "text/plain").status == 404);  // a directory
}
