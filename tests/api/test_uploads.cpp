// Streamed uploads (RouteOptions::body_to_file) over real loopback sockets: big bodies with bounded memory,
// chunked, 100-continue, limits, the file's fate after the response.
#include "tests/api/test_server.h"

using namespace tsum;
using namespace tsum::api;
using namespace tsum::api::testing;
using tsum::api::HttpConnection;
using tsum::api::http_call;

TEST_CASE("uploads: a 64 MiB body streams to a file; the server's memory stays flat") {
  require_curl();
  TestServer s;  // body_limit 1024 for in-memory routes
  const std::string source = s.files.file("source.bin");
  constexpr std::uint64_t kSize = std::uint64_t{64} << 20;
  write_pattern_file(source, kSize);

  REQUIRE_MESSAGE(reset_peak_rss(), "cannot reset VmHWM through /proc/self/clear_refs");
  const std::uint64_t before = peak_rss_kib();
  REQUIRE(before > 0);
  auto r = run_command("curl -sS -f --max-time 60 -T " + source + " " + url(s, "/upload/big.bin"));
  const std::uint64_t growth_kib = peak_rss_kib() - before;
  REQUIRE(r.status == 0);
  auto body = nlohmann::json::parse(r.out, nullptr, false);
  CHECK(body["size"] == kSize);
  CHECK(body["body_empty"] == true);
  CHECK(body["in_upload_dir"] == true);
  CAPTURE(growth_kib);
  CHECK(growth_kib < 16 * 1024);  // the 64 MiB never sat in this process's memory
  CHECK(same_file(source, s.kept_dir + "/big.bin"));
  CHECK(s.uploads_cleared());
}

TEST_CASE("uploads: chunked transfer encoding (curl -T - from a pipe)") {
  require_curl();
  TestServer s;
  const std::string source = s.files.file("source.bin");
  write_pattern_file(source, (std::uint64_t{5} << 20) + 12345);
  auto r = run_command("cat " + source + " | curl -sS -f --max-time 60 -T - " + url(s, "/upload/piped.bin"));
  REQUIRE(r.status == 0);
  CHECK(nlohmann::json::parse(r.out)["size"] == (std::uint64_t{5} << 20) + 12345);
  CHECK(same_file(source, s.kept_dir + "/piped.bin"));

  HttpConnection conn;  // and by hand, with 100-continue and chunk extensions
  REQUIRE(conn.connect(kHost, s.port));
  REQUIRE(conn.send_raw("PUT /upload/chunks.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                        "Expect: 100-continue\r\n\r\n"));
  CHECK(conn.read_for(500ms).data.rfind("HTTP/1.1 100 Continue\r\n\r\n", 0) == 0);
  REQUIRE(conn.send_raw("3;ext=1\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n"  // and a request behind it
                        "GET /files/chunks.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  auto raw = conn.read_until_close(5s);
  CHECK(raw.closed);
  CHECK(raw.data.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(contains(raw.data, R"("size":7)"));
  CHECK(raw.data.ends_with("\r\n\r\nabcdefg"));
  CHECK(read_file(s.kept_dir + "/chunks.txt") == "abcdefg");
  CHECK(s.uploads_cleared());
}

TEST_CASE("uploads: Expect: 100-continue with Content-Length") {
  TestServer s;
  HttpConnection conn;
  REQUIRE(conn.connect(kHost, s.port));
  REQUIRE(conn.send_raw("PUT /upload/hello.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                        "Expect: 100-continue\r\n\r\n"));
  CHECK(conn.read_for(500ms).data.rfind("HTTP/1.1 100 Continue\r\n\r\n", 0) == 0);
  REQUIRE(conn.send_raw("hello"));
  auto raw = conn.read_for(500ms);  // the connection stays open (keep-alive)
  CHECK(raw.data.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(contains(raw.data, R"("size":5)"));
  CHECK(read_file(s.kept_dir + "/hello.txt") == "hello");
  CHECK(conn.call("GET", "/v1/runs/1").status == 200);  // keep-alive after an upload
}

TEST_CASE("uploads: the handler's rename keeps the file, anything left is removed after the response") {
  TestServer s;
  HttpConnection conn;
  REQUIRE(conn.connect(kHost, s.port));
  auto kept = conn.call("PUT", "/upload/keep.txt", "keep me");
  REQUIRE(kept.status == 200);
  CHECK(kept.json()["size"] == 7);
  CHECK(read_file(s.kept_dir + "/keep.txt") == "keep me");
  CHECK(s.upload_files() == 0);

  auto discarded = conn.call("PUT", "/upload/discard", "throw me away");
  REQUIRE(discarded.status == 200);
  CHECK(discarded.json()["size"] == 13);
  CHECK(discarded.json()["in_upload_dir"] == true);
  CHECK(s.uploads_cleared());  // the server removed what the handler left

  auto empty = conn.call("PUT", "/upload/empty.txt", "", {{"Content-Length", "0"}});
  REQUIRE(empty.status == 200);
  CHECK(empty.json()["size"] == 0);
  CHECK(std::filesystem::exists(s.kept_dir + "/empty.txt"));

  CHECK(conn.call("GET", "/v1/runs/1").status == 200);  // keep-alive throughout
}

TEST_CASE("uploads: past the route's limit or upload_limit: 413, connection closed, partial file removed") {
  TestServer s;  // PUT /limited: 4096 bytes
  SUBCASE("Content-Length over the route limit is refused before 100-continue") {
    HttpConnection conn;
    REQUIRE(conn.connect(kHost, s.port));
    REQUIRE(conn.send_raw("PUT /limited HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n"));
    auto raw = conn.read_until_close(5s);
    CHECK(raw.closed);
    CHECK(raw.data.rfind("HTTP/1.1 413", 0) == 0);
    CHECK_FALSE(contains(raw.data, "100 Continue"));
    CHECK(contains(raw.data, "4096"));
  }
  SUBCASE("a chunked body growing past the route limit") {
    HttpConnection conn;
    REQUIRE(conn.connect(kHost, s.port));
    std::string req = "PUT /limited HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 3; ++i) req += "7d0\r\n" + std::string(2000, 'c') + "\r\n";  // 0x7d0 = 2000
    REQUIRE(conn.send_raw(req));
    auto raw = conn.read_until_close(5s);
    CHECK(raw.closed);
    CHECK(raw.data.rfind("HTTP/1.1 413", 0) == 0);
    CHECK(s.uploads_cleared());
  }
  SUBCASE("exactly the limit is accepted") {
    auto r = http_call(kHost, s.port, "PUT", "/limited", std::string(4096, 'l'));
    CHECK(r.status == 200);
    CHECK(r.json()["size"] == 4096);
  }
  CHECK(s.uploads_cleared());
  CHECK(http_call(kHost, s.port, "GET", "/v1/runs/7").status == 200);
}

TEST_CASE("uploads: ServerOptions::upload_limit applies to routes without their own limit") {
  ServerOptions opts = test_options();
  opts.upload_limit = 10000;
  TestServer s(opts);
  auto small = http_call(kHost, s.port, "PUT", "/upload/small.bin", std::string(10000, 's'));
  CHECK(small.status == 200);  // way past body_limit (1024): that one is for memory routes only

  auto big = http_call(kHost, s.port, "PUT", "/upload/big.bin", std::string(10001, 'b'));
  CHECK(big.status == 413);
  CHECK(big.header("Connection") == "close");

  HttpConnection conn;
  REQUIRE(conn.connect(kHost, s.port));
  std::string req = "PUT /upload/chunked.bin HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 3; ++i) req += "1770\r\n" + std::string(6000, 'c') + "\r\n";  // 0x1770 = 6000
  REQUIRE(conn.send_raw(req));
  auto raw = conn.read_until_close(5s);
  CHECK(raw.closed);
  CHECK(raw.data.rfind("HTTP/1.1 413", 0) == 0);
  CHECK_FALSE(std::filesystem::exists(s.kept_dir + "/chunked.bin"));
  CHECK(s.uploads_cleared());
}

TEST_CASE("uploads: memory routes keep their in-memory bodies and limits") {
  TestServer s;  // body_limit 1024; POST /memory: 4096
  auto ok = http_call(kHost, s.port, "POST", "/memory", std::string(3000, 'm'));
  CHECK(ok.status == 200);
  CHECK(ok.json()["size"] == 3000);
  CHECK(ok.json()["body_file"] == "");
  CHECK(http_call(kHost, s.port, "POST", "/memory", std::string(5000, 'm')).status == 413);
  CHECK(http_call(kHost, s.port, "POST", "/v1/runs/1/events", std::string(2000, 'e')).status == 413);
  CHECK(s.upload_files() == 0);
}

TEST_CASE("uploads: a stalled upload is closed by the read deadline and its file removed") {
  TestServer s;  // read_timeout 1 s
  HttpConnection conn;
  REQUIRE(conn.connect(kHost, s.port));
  REQUIRE(conn.send_raw("PUT /upload/stalled.bin HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly some"));
  auto raw = conn.read_until_close(10s);
  CHECK(raw.closed);
  CHECK(raw.data.empty());
  CHECK(s.uploads_cleared());
  CHECK_FALSE(std::filesystem::exists(s.kept_dir + "/stalled.bin"));
}

TEST_CASE("uploads: a slow upload that keeps making progress outlives read_timeout") {
  TestServer s;  // read_timeout 1 s: the whole upload takes longer, each piece arrives well within it (a quarter)
  HttpConnection conn;
  REQUIRE(conn.connect(kHost, s.port));
  REQUIRE(conn.send_raw("PUT /upload/slow.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\n"));
  for (const char* piece : {"a", "b", "c", "d", "e", "f"}) {
    std::this_thread::sleep_for(250ms);
    REQUIRE(conn.send_raw(piece));
  }
  REQUIRE(conn.send_raw("GET /v1/runs/1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  auto raw = conn.read_until_close(5s);
  CHECK(raw.data.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(read_file(s.kept_dir + "/slow.txt") == "abcdef");
}

TEST_CASE("uploads: an upload_dir that cannot be created gets 500 and close") {
  ServerOptions opts = test_options();
  opts.upload_dir = "/proc/self/no-such-dir/uploads";
  TestServer s(opts);
  HttpConnection conn;
  REQUIRE(conn.connect(kHost, s.port));
  REQUIRE(conn.send_raw("PUT /upload/x HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"));
  auto raw = conn.read_until_close(5s);
  CHECK(raw.closed);
  CHECK(raw.data.rfind("HTTP/1.1 500", 0) == 0);
  CHECK(contains(raw.data, "upload directory"));
  CHECK(http_call(kHost, s.port, "GET", "/v1/runs/1").status == 200);
}
