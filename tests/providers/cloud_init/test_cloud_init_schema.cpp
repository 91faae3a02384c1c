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
        CHECK(ud->size() <= kMaxUserDataBytes);
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

TEST_CASE("the agent script travels gzipped (gz+b64) and comes back byte for byte, less its comment lines") {
  auto spec = run_spec("native");
  auto ud = cloud_init_user_data(spec, {});
  REQUIRE(ud);
  auto at = ud->find("path: /opt/tsum/agent.sh\n    permissions: '0755'\n    encoding: gz+b64\n    content: ");
  REQUIRE(at != std::string::npos);
  at = ud->find("content: ", at) + 9;
  auto gz = http::base64_decode(ud->substr(at, ud->find('\n', at) - at));
  REQUIRE(gz);
  auto script = http::gzip_decompress(*gz);
  REQUIRE(script);
  CHECK(*script == without_comment_lines(spec.agent_script));
  CHECK(http::gzip_decompress("not gzip").code() == Code::invalid_argument);
  CHECK(http::gzip_decompress(gz->substr(0, gz->size() - 4)).code() == Code::invalid_argument);  // truncated
  CHECK(cloud_init_user_data(LaunchSpec{.runtime = "podman"}, {}).code() == Code::invalid_argument);
}
