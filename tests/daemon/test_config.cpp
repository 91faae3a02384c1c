// The config file: every field checked by path, defaults, permissions of the file and of its key files.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <fstream>

#include "daemon/config.h"
#include "support/temp_dir.h"

using namespace tsum;
using namespace tsum::daemon;
using tsum::testing::TempDir;

namespace {

const char* kTwoHosts = R"({
  "providers": {"ssh": {
    "connect_timeout_s": 4,
    "hosts": [
      {"name": "box1", "address": "10.0.0.2", "user": "root", "key_file": "id_box", "cores": 4,
       "hourly_price": 0.12},
      {"name": "gpu-a", "address": "gpu.lan", "port": 2222, "user": "ml", "key_env": "GPU_KEY", "cores": 16,
       "gpus": 2, "gpu_type": "rtx4090", "memory_gib": 64, "hourly_price": 0.9, "billing": "per_hour",
       "power_on": "wakeonlan aa:bb", "power_off": "true", "work_dir": "/scratch/tsum"}
    ]}}})";

std::string write(const TempDir& d, const std::string& name, const std::string& text, mode_t mode) {
  std::string p = d.file(name);
  std::ofstream(p) << text;
  chmod(p.c_str(), mode);
  return p;
}

std::string error_of(const std::string& text) {
  auto c = parse_config(text, "/etc/tsum");
  return c ? std::string("(ok)") : c.error().detail;
}

std::string one_host(const std::string& extra) {
  return R"({"providers":{"ssh":{"hosts":[{"name":"h","address":"a","user":"u","key_file":"/k","cores":1,"hourly_price":1)" +
         extra + "}]}}}";
}

}  // namespace

TEST_CASE("a config with two ssh hosts: values, defaults and relative key paths") {
  auto c = parse_config(kTwoHosts, "/etc/tsum");
  REQUIRE(c);
  REQUIRE(c->ssh);
  const auto& o = *c->ssh;
  CHECK(o.connect_timeout == std::chrono::seconds(4));
  CHECK(o.alive_interval == std::chrono::seconds(5));
  REQUIRE(o.hosts.size() == 2);
  CHECK(o.hosts[0].port == 22);
  CHECK(o.hosts[0].key_file == "/etc/tsum/id_box");
  CHECK(o.hosts[0].billing == "step:1");
  CHECK(o.hosts[0].work_dir == "/var/tmp/tsum");
  CHECK(o.hosts[1].port == 2222);
  CHECK(o.hosts[1].gpus == 2);
  CHECK(o.hosts[1].billing == "per_hour");
  CHECK(o.hosts[1].key_file.empty());
  REQUIRE(c->ssh_env_keys.size() == 1);
  CHECK(c->ssh_env_keys[0].host == "gpu-a");
  CHECK(c->ssh_env_keys[0].variable == "GPU_KEY");
  CHECK_FALSE(parse_config("{}", "/")->ssh);
}

TEST_CASE("unknown fields, wrong types and bad values are errors naming the field") {
  CHECK(error_of(R"({"provider": {}})") == "config.provider: unknown field");
  CHECK(error_of(R"({"providers": {"gce": {}}})") == "providers.gce: unknown provider (known: ssh)");
  CHECK(error_of(R"({"providers": {"ssh": {"hosts": []}}})") == "providers.ssh.hosts: must be a non-empty array of hosts");
  CHECK(error_of(R"({"providers": {"ssh": {"hosts": [{}], "x": 1}}})") == "providers.ssh.hosts[0].name: is required");
  CHECK(error_of(one_host(R"(,"prot":22)")) == "providers.ssh.hosts[0].prot: unknown field");
  CHECK(error_of(one_host(R"(,"port":0)")) == "providers.ssh.hosts[0].port: must be an integer from 1 to 65535");
  CHECK(error_of(one_host(R"(,"port":"22")")) == "providers.ssh.hosts[0].port: must be an integer from 1 to 65535");
  CHECK(error_of(one_host(R"(,"hourly_price":-1)")) == "providers.ssh.hosts[0].hourly_price: must be a number >= 0");
  CHECK(error_of(one_host(R"(,"billing":"per_fortnight")")).starts_with("providers.ssh.hosts[0].billing: "));
  CHECK(error_of(one_host(R"(,"work_dir":"relative")")).starts_with("providers.ssh.hosts[0].work_dir: "));
  CHECK(error_of(one_host(R"(,"key_env":"K")")) == "providers.ssh.hosts[0]: needs exactly one of key_file and key_env");
  CHECK(error_of(one_host(R"(,"remote_data":"data")")).starts_with("providers.ssh.hosts[0].remote_data: "));
  std::string bad_address = R"({"providers":{"ssh":{"hosts":[{"name":"h","address":"-oProxyCommand=x","user":"u","key_file":"/k","cores":1,"hourly_price":1}]}}})";
  CHECK(error_of(bad_address) == "providers.ssh.hosts[0].address: must be a host name or an IP address");
  std::string twice = R"({"providers":{"ssh":{"hosts":[)" + std::string(R"({"name":"h","address":"a","user":"u","key_file":"/k","cores":1,"hourly_price":1})") +
                      "," + R"({"name":"h","address":"b","user":"u","key_file":"/k","cores":1,"hourly_price":1})" + "]}}}";
  CHECK(error_of(twice) == "providers.ssh.hosts[1].name: 'h' is used twice");
  CHECK(error_of(R"({"providers":{"ssh":{"hosts":[{"name":"h"}]}}})") == "providers.ssh.hosts[0].address: is required");
  std::string zero = one_host("");
  zero.insert(zero.size() - 3, R"(,"connect_timeout_s":0)");
  CHECK(error_of(zero) == "providers.ssh.connect_timeout_s: must be an integer from 1 to 86400");
  CHECK(error_of("not json") == "config: not valid JSON");
}

TEST_CASE("load_config refuses loose permissions on the config and on key files") {
  TempDir d;
  std::string key = write(d, "id_box", "KEY", 0600);
  std::string plain = R"({"providers":{"ssh":{"hosts":[{"name":"h","address":"a","user":"u","key_file":"id_box","cores":1,"hourly_price":1}]}}})";
  CHECK(load_config(write(d, "ok.json", plain, 0644)));  // no secrets: may be world-readable
  auto writable = load_config(write(d, "w.json", plain, 0664));
  REQUIRE_FALSE(writable);
  CHECK(writable.error().detail.find("others may change the commands it runs") != std::string::npos);

  std::string with_power = R"({"providers":{"ssh":{"hosts":[{"name":"h","address":"a","user":"u","key_file":"id_box","cores":1,"hourly_price":1,"power_on":"ipmitool -P secret power on"}]}}})";
  auto readable = load_config(write(d, "p.json", with_power, 0644));
  REQUIRE_FALSE(readable);
  CHECK(readable.error().detail.find("has mode 0644") != std::string::npos);
  CHECK(readable.error().detail.find("chmod 600") != std::string::npos);
  CHECK(readable.error().detail.find("secret") == std::string::npos);  // the command is not repeated
  CHECK(load_config(write(d, "p2.json", with_power, 0600)));

  chmod(key.c_str(), 0644);
  auto loose_key = load_config(d.file("ok.json"));
  REQUIRE_FALSE(loose_key);
  CHECK(loose_key.error().detail.find("private key of ssh host h is readable by others") != std::string::npos);
  auto missing = load_config(d.file("nope.json"));
  REQUIRE_FALSE(missing);
  CHECK(missing.error().detail.find("nope.json") != std::string::npos);
}

TEST_CASE("a key from the environment is written to the state dir with mode 0600") {
  TempDir d;
  auto c = parse_config(kTwoHosts, "/etc/tsum");
  REQUIRE(c);
  c->ssh->state_dir = d.path().string();
  unsetenv("GPU_KEY");
  auto unset = materialize_env_keys(*c);
  REQUIRE_FALSE(unset);
  CHECK(unset.error().detail == "ssh host gpu-a: environment variable GPU_KEY (its key_env) is not set");
  setenv("GPU_KEY", "-----BEGIN KEY-----\nabc\n-----END KEY-----", 1);
  REQUIRE(materialize_env_keys(*c));
  std::string path = c->ssh->hosts[1].key_file;
  CHECK(path == d.file("ssh/keys/gpu-a"));
  struct stat st{};
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  std::ifstream in(path);
  std::string text{std::istreambuf_iterator<char>(in), {}};
  CHECK(text == "-----BEGIN KEY-----\nabc\n-----END KEY-----\n");
  unsetenv("GPU_KEY");
}
