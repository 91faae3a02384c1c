// HttpServer over TLS (ServerOptions::tls_cert_file/tls_key_file), checked with the curl command line and a
// throwaway CA (tests/support/test_tls.h): requests, SSE, uploads, Range downloads, plain-HTTP clients.
#include "support/test_tls.h"
#include "tests/api/test_server.h"

using namespace tsum;
using namespace tsum::api;
using namespace tsum::api::testing;
using tsum::api::HttpConnection;

namespace {

ServerOptions tls_options(const tsum::testing::TestTls& tls) {
  ServerOptions opts = test_options();
  opts.tls_cert_file = tls.cert_file();
  opts.tls_key_file = tls.key_file();
  return opts;
}

// curl with the test CA, bounded, silent but for errors.
std::string curl(const tsum::testing::TestTls& tls) { return "curl -sS --max-time 30 --cacert " + tls.ca_file() + " "; }

std::string https(const TestServer& s, const std::string& path) {
  return "https://127.0.0.1:" + std::to_string(s.port) + path;
}

}  // namespace

TEST_CASE("tls: HTTPS requests verified against the CA, keep-alive, request bodies") {
  require_curl();
  tsum::testing::TestTls tls;
  TestServer s(tls_options(tls));

  auto one = run_command(curl(tls) + "-f '" + https(s, "/v1/runs/5?x=1") + "'");
  REQUIRE(one.status == 0);
  auto body = nlohmann::json::parse(one.out, nullptr, false);
  CHECK(body["id"] == "5");
  CHECK(body["query"]["x"] == "1");

  // Two requests in one curl run share the connection: the server saw the same peer port.
  auto two = run_command(curl(tls) + "-f " + https(s, "/v1/runs/1") + " -w '\\n' " + https(s, "/v1/runs/2"));
  REQUIRE(two.status == 0);
  auto newline = two.out.find('\n');
  REQUIRE(newline != std::string::npos);
  auto first = nlohmann::json::parse(two.out.substr(0, newline), nullptr, false);
  auto second = nlohmann::json::parse(two.out.substr(newline + 1), nullptr, false);
  CHECK(first["id"] == "1");
  CHECK(second["id"] == "2");
  CHECK(first["remote"] == second["remote"]);

  auto posted = run_command(curl(tls) + "-f -H 'Content-Type: application/json' -d '{\"phase\":\"learn\"}' " +
                            https(s, "/v1/runs/9/events"));
  REQUIRE(posted.status == 0);
  CHECK(nlohmann::json::parse(posted.out)["body"] == R"({"phase":"learn"})");

  auto tls12 = run_command(curl(tls) + "--tlsv1.2 --tls-max 1.2 -o /dev/null -w '%{http_code}' " + https(s, "/v1/runs/1"));
  CHECK(tls12.out == "200");

  // Without the CA, curl refuses the certificate: the server really presents the test certificate.
  auto unverified = run_command("curl -sS --max-time 30 -o /dev/null " + https(s, "/v1/runs/1") + " 2>/dev/null");
  CHECK(unverified.status == 60);
}

TEST_CASE("tls: a streaming response (SSE) ends with a clean TLS close") {
  require_curl();
  tsum::testing::TestTls tls;
  TestServer s(tls_options(tls));
  auto r = run_command(curl(tls) + "-N -D - " + https(s, "/stream"));
  CHECK(r.status == 0);  // curl fails (56) on a TLS stream cut without close_notify
  CHECK(contains(r.out, "Content-Type: text/event-stream\r\n"));
  CHECK(r.out.ends_with("\r\n\r\ndata: 1\n\ndata: 2\n\n"));
}

TEST_CASE("tls: plain HTTP or silence gets no answer; the server keeps serving HTTPS") {
  require_curl();
  tsum::testing::TestTls tls;
  TestServer s(tls_options(tls));  // read_timeout 1 s: also the handshake's deadline
  {
    HttpConnection conn;
    REQUIRE(conn.connect(kHost, s.port));
    REQUIRE(conn.send_raw("GET /v1/runs/1 HTTP/1.1\r\nHost: x\r\n\r\n"));
    auto raw = conn.read_until_close(5s);
    CHECK(raw.closed);
    CHECK_FALSE(contains(raw.data, "HTTP/1."));
  }
  {
    HttpConnection silent;
    REQUIRE(silent.connect(kHost, s.port));
    auto raw = silent.read_until_close(10s);
    CHECK(raw.closed);  // the handshake deadline
    CHECK(raw.data.empty());
  }
  auto plain = run_command("curl -sS --max-time 10 -o /dev/null http://127.0.0.1:" + std::to_string(s.port) +
                           "/v1/runs/1 2>/dev/null");
  CHECK(plain.status != 0);

  auto after = run_command(curl(tls) + "-f " + https(s, "/v1/runs/3"));
  REQUIRE(after.status == 0);
  CHECK(nlohmann::json::parse(after.out)["id"] == "3");
}

TEST_CASE("tls: uploads and Range downloads") {
  require_curl();
  tsum::testing::TestTls tls;
  TestServer s(tls_options(tls));
  const std::string source = s.files.file("source.bin");
  const std::uint64_t size = (std::uint64_t{8} << 20) + 777;
  write_pattern_file(source, size);

  auto put = run_command(curl(tls) + "-f -T " + source + " " + https(s, "/upload/up.bin"));
  REQUIRE(put.status == 0);
  CHECK(nlohmann::json::parse(put.out)["size"] == size);
  CHECK(same_file(source, s.kept_dir + "/up.bin"));

  auto piped = run_command("cat " + source + " | " + curl(tls) + "-f -T - " + https(s, "/upload/piped.bin"));
  REQUIRE(piped.status == 0);
  CHECK(same_file(source, s.kept_dir + "/piped.bin"));
  CHECK(s.uploads_cleared());

  const std::string partial = s.files.file("partial.bin");
  {
    std::ifstream in(source, std::ios::binary);
    std::string head(1234567, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    std::ofstream(partial, std::ios::binary) << head;
  }
  auto resumed = run_command(curl(tls) + "-f -C - -o " + partial + " -w '%{http_code}' " + https(s, "/files/up.bin"));
  REQUIRE(resumed.status == 0);
  CHECK(resumed.out == "206");
  CHECK(same_file(source, partial));

  auto range = run_command(curl(tls) + "-f -r 10-19 " + https(s, "/files/up.bin"));
  REQUIRE(range.status == 0);
  std::ifstream in(source, std::ios::binary);
  std::string expected(30, '\0');
  in.read(expected.data(), 30);
  CHECK(range.out == expected.substr(10, 10));

  // Past the route's limit while still uploading: curl reads the 413, the partial file goes.
  auto refused = run_command("cat " + source + " | " + curl(tls) + "-T - -o /dev/null -w '%{http_code}' " +
                             https(s, "/limited") + " 2>/dev/null");
  CHECK(refused.out == "413");
  CHECK(s.uploads_cleared());
}

TEST_CASE("tls: listen() names the certificate or key it cannot use") {
  tsum::testing::TestTls tls;
  asio::io_context io;
  Router router;
  auto listen_with = [&](std::string cert, std::string key) {
    ServerOptions opts;
    opts.tls_cert_file = std::move(cert);
    opts.tls_key_file = std::move(key);
    HttpServer server(io, router, opts);
    auto port = server.listen(kHost, 0);
    return port.ok() ? std::string("ok") : std::string(code_name(port.code())) + ": " + port.error().detail;
  };
  CHECK(listen_with(tls.cert_file(), tls.key_file()) == "ok");

  std::string missing_cert = listen_with("/nonexistent/cert.pem", tls.key_file());
  CHECK(missing_cert.rfind("invalid_argument", 0) == 0);
  CHECK(contains(missing_cert, "/nonexistent/cert.pem"));

  std::string missing_key = listen_with(tls.cert_file(), "/nonexistent/key.pem");
  CHECK(missing_key.rfind("invalid_argument", 0) == 0);
  CHECK(contains(missing_key, "/nonexistent/key.pem"));

  std::string wrong_key = listen_with(tls.cert_file(), tls.cert_file());  // a certificate is no key
  CHECK(wrong_key.rfind("invalid_argument", 0) == 0);
  CHECK(contains(wrong_key, tls.cert_file()));

  std::string only_cert = listen_with(tls.cert_file(), "");
  CHECK(only_cert.rfind("invalid_argument", 0) == 0);
  CHECK(contains(only_cert, tls.cert_file()));

  std::string other_key = listen_with(tls.cert_file(), tls.ca_file());  // not a key either
  CHECK(other_key.rfind("invalid_argument", 0) == 0);

  tsum::testing::TestTls another;  // a real key, but of another certificate
  std::string mismatch = listen_with(tls.cert_file(), another.key_file());
  CHECK(mismatch.rfind("invalid_argument", 0) == 0);
  CHECK(contains(mismatch, another.key_file()));
  io.run();  // the one server that listened has stopped: its accept loop ends
}
