// The command line every fake shares, with a cloud's own flags next to it.
#include <doctest/doctest.h>

#include "tests/fakes/cloud/fake_flags.h"

using namespace tsum::providers::fake_cloud;

namespace {

struct Cloud {
  FakeServerOptions server;
  std::string token = "default-token";
  double pending_s = 2;
  int page_size = 50;
  bool drop = false;
};

// Parses args (program name first) for a cloud with one flag of each kind.
std::optional<int> parse(Cloud& c, std::vector<std::string> args, const std::string& tls_key = "") {
  FakeFlags flags("tsum-fake-test", &c.server, "things.create:lost");
  if (!tls_key.empty()) flags.rename_tls_key(tls_key);
  flags.text("--token", "TOKEN", &c.token, "the token");
  flags.seconds("--pending-s", &c.pending_s, "pending -> running");
  flags.count("--page-size", &c.page_size, "items per page");
  flags.toggle("--drop", &c.drop, "drop things");
  args.insert(args.begin(), "tsum-fake-test");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return flags.parse(static_cast<int>(argv.size()), argv.data());
}

}  // namespace

TEST_CASE("shared and cloud flags land in their fields") {
  Cloud c;
  CHECK_FALSE(parse(c, {"--listen", "127.0.0.2:8443", "--cert", "c.pem", "--key", "k.pem", "--faults", "a:429:2,b:lost",
                        "--guest-root", "/tmp/g", "--hang-ms", "250", "--retry-after-s", "3", "--token", "t0k",
                        "--pending-s", "0.5", "--page-size", "2", "--drop"}));
  CHECK(c.server.listen.host == "127.0.0.2");
  CHECK(c.server.listen.port == 8443);
  CHECK(c.server.listen.cert_file == "c.pem");
  CHECK(c.server.listen.key_file == "k.pem");
  REQUIRE(c.server.faults.size() == 2);
  CHECK(c.server.faults[0].count == 2);
  CHECK(c.server.guest.root == "/tmp/g");
  CHECK(c.server.hang == std::chrono::milliseconds(250));
  CHECK(c.server.retry_after_s == 3);
  CHECK(c.token == "t0k");
  CHECK(c.pending_s == 0.5);
  CHECK(c.page_size == 2);
  CHECK(c.drop);
  Cloud p;
  CHECK_FALSE(parse(p, {"--port", "9000"}));
  CHECK(p.server.listen.host == "127.0.0.1");
  CHECK(p.server.listen.port == 9000);
  CHECK(p.token == "default-token");
}

TEST_CASE("bad command lines exit 2; --help exits 0 listing every flag with its default") {
  for (std::vector<std::string> bad : {std::vector<std::string>{"--colour", "red"}, {"--pending-s", "-1"}, {"--pending-s", "x"},
                                       {"--page-size", "0"}, {"--page-size", "1.5"}, {"--listen", "nohost"},
                                       {"--port", "70000"}, {"--faults", "a:boom"}, {"--token"}, {"--cert", "c.pem"}}) {
    Cloud c;
    CAPTURE(bad[0]);
    CHECK(parse(c, bad) == 2);
  }
  Cloud c;
  CHECK(parse(c, {"--help"}) == 0);
  Cloud server_only;
  FakeFlags flags("tsum-fake-test", &server_only.server, "things.create:lost");
  flags.seconds("--pending-s", &server_only.pending_s, "pending -> running");
  const std::string usage = flags.usage();
  CHECK(usage.starts_with("usage: tsum-fake-test [flags]\n"));
  for (const char* flag : {"--listen HOST:PORT", "--port N", "--cert FILE", "--key FILE", "--guest-root DIR", "--faults SPEC",
                           "--hang-ms MS", "--retry-after-s N", "--pending-s S"})
    CHECK_MESSAGE(usage.find(flag) != std::string::npos, flag);
  CHECK(usage.find("pending -> running (default 2)") != std::string::npos);
  CHECK(usage.find("e.g. things.create:lost") != std::string::npos);
}

TEST_CASE("a cloud that needs --key for itself renames the TLS key flag") {
  Cloud c;
  CHECK_FALSE(parse(c, {"--cert", "c.pem", "--key-pem", "k.pem"}, "--key-pem"));
  CHECK(c.server.listen.key_file == "k.pem");
  Cloud d;
  CHECK(parse(d, {"--key", "k.pem"}, "--key-pem") == 2);  // not a flag of this cloud
}
