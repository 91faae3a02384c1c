// File bodies (Response::file, file_response with Range) over real loopback sockets.
#include "tests/api/test_server.h"

using namespace tsum;
using namespace tsum::api;
using namespace tsum::api::testing;
using tsum::api::HttpConnection;
using tsum::api::http_call;

TEST_CASE("files: whole file, ranges and 416 on one keep-alive connection") {
  TestServer s;
  write_pattern_file(s.kept_dir + "/f.bin", 200000);
  const std::string content = read_file(s.kept_dir + "/f.bin");
  HttpConnection conn;
  REQUIRE(conn.connect(kHost, s.port));

  auto whole = conn.call("GET", "/files/f.bin");
  REQUIRE(whole.ok());
  CHECK(whole.status == 200);
  CHECK(whole.body == content);
  CHECK(whole.header("Content-Length") == "200000");
  CHECK(whole.header("Content-Type") == "application/octet-stream");
  CHECK(whole.header("Accept-Ranges") == "bytes");
  CHECK(whole.header("Server") == "tsumd-test");

  struct Case {
    const char* range;
    std::size_t offset;
    std::size_t length;
    const char* content_range;
  };
  for (const Case& c : {Case{"bytes=10-19", 10, 10, "bytes 10-19/200000"},
                        Case{"bytes=70000-", 70000, 130000, "bytes 70000-199999/200000"},
                        Case{"bytes=-5", 199995, 5, "bytes 199995-199999/200000"},
                        Case{"bytes=199999-300000", 199999, 1, "bytes 199999-199999/200000"}}) {
    CAPTURE(c.range);
    auto r = conn.call("GET", "/files/f.bin", "", {{"Range", c.range}});
    REQUIRE(r.ok());
    CHECK(r.status == 206);
    CHECK(r.body == content.substr(c.offset, c.length));
    CHECK(r.header("Content-Length") == std::to_string(c.length));
    CHECK(r.header("Content-Range") == c.content_range);
  }

  auto unsatisfiable = conn.call("GET", "/files/f.bin", "", {{"Range", "bytes=200000-"}});
  CHECK(unsatisfiable.status == 416);
  CHECK(unsatisfiable.header("Content-Range") == "bytes */200000");
  CHECK(unsatisfiable.header("Accept-Ranges") == "bytes");

  auto multi = conn.call("GET", "/files/f.bin", "", {{"Range", "bytes=0-1,5-6"}});
  CHECK(multi.status == 200);
  CHECK(multi.body.size() == content.size());
  auto malformed = conn.call("GET", "/files/f.bin", "", {{"Range", "bytes=9-3"}});
  CHECK(malformed.status == 200);
  CHECK(malformed.body == content);

  auto after = conn.call("GET", "/v1/runs/1");  // the connection survived every file body
  CHECK(after.status == 200);

  auto missing = conn.call("GET", "/files/nope.bin");
  CHECK(missing.status == 404);
  CHECK(missing.json()["error"] == "not_found");
}

TEST_CASE("files: Connection: close after a file body closes the connection") {
  TestServer s;
  std::ofstream(s.kept_dir + "/small.txt") << "small file";
  HttpConnection conn;
  REQUIRE(conn.connect(kHost, s.port));
  REQUIRE(conn.send_raw("GET /files/small.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  auto raw = conn.read_until_close(5s);
  CHECK(raw.closed);
  CHECK(raw.data.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(contains(raw.data, "Content-Length: 10\r\n"));
  CHECK(contains(raw.data, "Connection: close\r\n"));
  CHECK(raw.data.ends_with("\r\n\r\nsmall file"));
}

TEST_CASE("files: a file body that cannot be sent closes the connection without an answer") {
  TestServer s;
  std::ofstream(s.kept_dir + "/short.txt") << "0123456789";
  for (const char* target : {"/raw-file/missing.txt?offset=0&length=5", "/raw-file/short.txt?offset=5&length=6",
                             "/raw-file/short.txt?offset=11&length=0"}) {
    CAPTURE(target);
    HttpConnection conn;
    REQUIRE(conn.connect(kHost, s.port));
    REQUIRE(conn.send_raw(std::string("GET ") + target + " HTTP/1.1\r\nHost: x\r\n\r\n"));
    auto raw = conn.read_until_close(5s);
    CHECK(raw.closed);
    CHECK(raw.data.empty());
  }
  auto part = http_call(kHost, s.port, "GET", "/raw-file/short.txt?offset=5&length=5");
  CHECK(part.status == 200);
  CHECK(part.body == "56789");
}

TEST_CASE("files: curl -C - resumes a 64 MiB download with exactly the tail; memory stays flat") {
  require_curl();
  TestServer s;
  const std::string source = s.kept_dir + "/big.bin";
  write_pattern_file(source, std::uint64_t{64} << 20);

  REQUIRE_MESSAGE(reset_peak_rss(), "cannot reset VmHWM through /proc/self/clear_refs");
  const std::uint64_t before = peak_rss_kib();
  const std::string whole = s.files.file("whole.bin");
  auto r = run_command("curl -sS -f --max-time 60 -o " + whole + " " + url(s, "/files/big.bin"));
  const std::uint64_t growth_kib = peak_rss_kib() - before;
  REQUIRE(r.status == 0);
  CHECK(same_file(source, whole));
  CAPTURE(growth_kib);
  CHECK(growth_kib < 16 * 1024);

  // A partial download of 3,000,001 bytes, resumed: curl asks for "Range: bytes=3000001-".
  const std::string partial = s.files.file("partial.bin");
  {
    std::ifstream in(source, std::ios::binary);
    std::string head(3000001, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    std::ofstream(partial, std::ios::binary) << head;
  }
  auto resumed = run_command("curl -sS -f --max-time 60 -C - -o " + partial + " -w '%{http_code} %{size_download}' " +
                             url(s, "/files/big.bin"));
  REQUIRE(resumed.status == 0);
  CHECK(resumed.out == "206 " + std::to_string((std::uint64_t{64} << 20) - 3000001));
  CHECK(same_file(source, partial));

  // Resuming a complete file: 416, which curl takes as "already complete".
  auto complete = run_command("curl -sS --max-time 60 -C - -o " + partial + " -w '%{http_code}' " +
                              url(s, "/files/big.bin"));
  CHECK(complete.out == "416");
  CHECK(same_file(source, partial));
}
