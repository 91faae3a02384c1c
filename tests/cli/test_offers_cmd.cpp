// `tsumd offers --config FILE` when one provider's price API fails: the failure is named on stderr and in
// the JSON's "errors", the other providers' offers are still printed, and the exit code is 1.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "cli/cli_process.h"
#include "integration/daemon_process.h"

using namespace tsum;
using namespace tsum::testing;
using nlohmann::json;

namespace {

std::string write_private(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.file(name);
  write_file(path, text);
  chmod(path.c_str(), 0600);
  return path;
}

// An ssh host (listing its offer touches nothing) and a Hetzner section whose API is a closed loopback port.
std::string config_with_dead_cloud(const TempDir& dir) {
  const std::string token = write_private(dir, "hcloud-token", "dead-port-token-0123456789\n");
  const std::string key = write_private(dir, "id_box", "not a real key\n");
  const std::string dead = "http://127.0.0.1:" + std::to_string(free_port()) + "/v1";
  json config = {{"providers",
                  {{"ssh", {{"hosts", {{{"name", "box1"}, {"address", "10.0.0.21"}, {"user", "tsum"}, {"key_file", key},
                                        {"cores", 4}, {"hourly_price", 0.08}}}}}},
                   {"hetzner", {{"token_file", token}, {"endpoint", dead}, {"attempt_timeout_s", 2}}}}}};
  return write_private(dir, "tsum.json", config.dump(2));
}

}  // namespace

TEST_CASE("tsumd offers: a provider whose price API fails is reported, exit 1, the others' offers still listed") {
  TempDir dir;
  const std::string config = config_with_dead_cloud(dir);

  auto r = run_cli(dir, {"offers", "--config", config, "--json"});
  INFO(r.out);
  INFO(r.err);
  CHECK(r.code == 1);
  CHECK(r.err.find("tsumd: hetzner: ") != std::string::npos);
  auto listed = json::parse(r.out, nullptr, false);
  REQUIRE(listed.is_object());
  REQUIRE(listed["offers"].size() == 1);
  CHECK(listed["offers"][0]["provider"] == "ssh");
  CHECK(listed["offers"][0]["instance_type"] == "box1");
  REQUIRE(listed["errors"].size() == 1);
  CHECK(listed["errors"][0]["provider"] == "hetzner");
  CHECK(listed["errors"][0]["detail"].get<std::string>().find("127.0.0.1") != std::string::npos);
  CHECK(r.err.find(listed["errors"][0]["detail"].get<std::string>()) != std::string::npos);

  auto table = run_cli(dir, {"offers", "--config", config});
  CHECK(table.code == 1);
  CHECK(table.out.find("box1") != std::string::npos);
  CHECK(table.err.find("tsumd: hetzner: ") != std::string::npos);

  auto ssh_only = run_cli(dir, {"offers", "--config", config, "--provider", "ssh", "--json"});
  CHECK(ssh_only.code == 0);
  CHECK(json::parse(ssh_only.out)["errors"] == json::array());
}
