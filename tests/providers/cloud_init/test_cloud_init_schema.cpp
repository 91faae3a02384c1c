// Every boot payload tsum generates is valid cloud-config by cloud-init's own validator (`cloud-init
// schema`, Debian package cloud-init): for each cloud's defaults, native and docker runtimes, with and
// without a lifetime, carrying the real agent script and a run's environment.
#include <doctest/doctest.h>

#include <fstream>
#include <span>

#include "common/embedded.h"
#include "providers/aws/aws_provider.h"
#include "providers/azure/azure_provider.h"
#include "providers/gce/gce_provider.h"
#include "providers/hetzner/hetzner_provider.h"
#include "providers/http/codec.h"
#include "providers/yandex/yandex_provider.h"
#include "support/temp_dir.h"

namespace tsum::daemon {
std::span<const EmbeddedFile> agent_files();  // compiled in from daemon/agent/
}

using namespace tsum;
using namespace tsum::providers;

namespace {

// cloud-init's verdict on the file: its exit status and output.
std::pair<int, std::string> cloud_init_schema(const std::string& path) {
  std::string out;
  FILE* p = popen(("cloud-init schema --config-file " + path + " 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[512];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

LaunchSpec run_spec(const std::string& runtime) {
  LaunchSpec s{.run_id = "42", .tag = "tsum-abc", .idempotency_token = "run42-tsum-abc",
               .agent_script = std::string(find_embedded(daemon::agent_files(), "tsum-agent.sh")),
               .env = {{"TSUM_URL", "https://tsum.example:8080"}, {"TSUM_RUN_ID", "42"},
                       {"TSUM_TOKEN", "tok'en with \"quotes\" and $dollar"}, {"TSUM_TRAIN_ARGS", "--epochs 2 --limit 100"}},
               .runtime = runtime};
  s.agent_sha256 = http::sha256_hex(s.agent_script);  // fetched by the bootstrap, as the daemon launches
  if (runtime == "docker") s.env["TSUM_IMAGE"] = "registry.example/tsum/tsum-train:1.0";
  return s;
}

}  // namespace

TEST_CASE("every generated boot payload passes cloud-init's schema validation") {
  REQUIRE_FALSE(run_spec("native").agent_script.empty());
  const std::pair<const char*, CloudInitOptions> clouds[] = {
      {"aws", aws::AwsOptions{}.cloud_init}, {"gce", gce::GceOptions{}.cloud_init},
      {"azure", azure::AzureOptions{}.cloud_init}, {"hetzner", hetzner::HetznerOptions{}.cloud_init},
      {"yandex", yandex::YandexOptions{}.cloud_init}};
  testing::TempDir dir("tsum-cloud-init");
  int checked = 0;
  for (auto [cloud, defaults] : clouds)
    for (const char* runtime : {"native", "docker"})
      for (int lifetime_min : {0, 90}) {
        CAPTURE(cloud);
        CAPTURE(runtime);
        auto opts = defaults;
        opts.max_lifetime = std::chrono::minutes(lifetime_min);
        auto ud = cloud_init_user_data(run_spec(runtime), opts);
        REQUIRE(ud);
        CHECK(ud->size() <= 4096);  // room to grow under EC2's 16 KiB
        const std::string path = dir.file(std::string(cloud) + "-" + runtime + "-" + std::to_string(lifetime_min) + ".yaml");
        std::ofstream(path) << *ud;
        auto [rc, out] = cloud_init_schema(path);
        INFO(out);
        CHECK(rc == 0);
        CHECK(out.find("Valid cloud-config") != std::string::npos);
        CHECK((ud->find("packages:\n  - docker.io\n") != std::string::npos) == (std::string(runtime) == "docker"));
        ++checked;
      }
  CHECK(checked == 20);
}

TEST_CASE("the validator does find errors: a payload with a wrong field type fails") {
  testing::TempDir dir("tsum-cloud-init");
  auto ud = cloud_init_user_data(run_spec("native"), {});
  REQUIRE(ud);
  std::string broken = *ud;
  broken.replace(broken.find("permissions: '0755'"), 19, "permissions: [0755]");
  std::ofstream(dir.file("broken.yaml")) << broken;
  auto [rc, out] = cloud_init_schema(dir.file("broken.yaml"));
  CHECK(rc != 0);
  CHECK(out.find("permissions") != std::string::npos);
}

TEST_CASE("a script carried whole travels gzipped (gz+b64) and comes back byte for byte; the real agent is fetched") {
  auto spec = run_spec("native");
  const std::string agent = spec.agent_script;
  auto content_of = [](const std::string& ud, const std::string& encoding) -> std::string {
    auto at = ud.find("path: /opt/tsum/agent.sh\n    permissions: '0755'\n    encoding: " + encoding + "\n    content: ");
    REQUIRE(at != std::string::npos);
    at = ud.find("content: ", at) + 9;
    auto bytes = http::base64_decode(ud.substr(at, ud.find('\n', at) - at));
    REQUIRE(bytes);
    return *bytes;
  };
  spec.agent_sha256.clear();  // carried whole: a script that fits
  spec.agent_script = agent.substr(0, 12000);
  auto ud = cloud_init_user_data(spec, {});
  REQUIRE(ud);
  auto gz = content_of(*ud, "gz+b64");
  auto script = http::gzip_decompress(gz);
  REQUIRE(script);
  CHECK(*script == spec.agent_script);
  CHECK(http::gzip_decompress("not gzip").code() == Code::invalid_argument);
  CHECK(http::gzip_decompress(gz.substr(0, gz.size() - 4)).code() == Code::invalid_argument);  // truncated
  spec.agent_script = agent;  // the whole agent carried so no longer fits EC2's 16 KiB: why the bootstrap fetches it
  auto whole = cloud_init_user_data(spec, {});
  REQUIRE_FALSE(whole);
  CHECK(whole.error().detail.find("over the limit of 16384") != std::string::npos);

  spec.agent_sha256 = http::sha256_hex(agent);  // as the daemon launches: the bootstrap fetches it by hash
  ud = cloud_init_user_data(spec, {});
  REQUIRE(ud);
  auto boot = content_of(*ud, "b64");
  CHECK(boot.starts_with("#!/bin/sh\n"));
  CHECK(boot.find("u=\"$TSUM_URL/v1/blobs/" + spec.agent_sha256 + "\"") != std::string::npos);
  CHECK(boot.find("= " + spec.agent_sha256 + " ]") != std::string::npos);
  CHECK(boot.size() < 1500);
  spec.agent_sha256 = std::string(64, 'a');  // a hash that is not the script's: refused
  CHECK(cloud_init_user_data(spec, {}).code() == Code::invalid_argument);
  CHECK(cloud_init_user_data(LaunchSpec{.runtime = "podman"}, {}).code() == Code::invalid_argument);
}
