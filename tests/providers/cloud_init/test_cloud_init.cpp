// The boot payload every adapter sends: what it writes and runs, and what it refuses.
#include <doctest/doctest.h>

#include "providers/cloud_init/cloud_init.h"
#include "providers/http/codec.h"

using namespace tsum;
using namespace tsum::providers;
using namespace std::chrono_literals;

TEST_CASE("the user data writes the agent, its environment and a start script, and runs the start script") {
  LaunchSpec spec{.run_id = "3", .agent_script = "#!/bin/sh\necho hi\n", .env = {{"TSUM_TOKEN", "a'b c"}, {"TSUM_URL", "http://x"}}};
  auto ud = cloud_init_user_data(spec, {.dir = "/opt/tsum", .max_lifetime = 90min});
  REQUIRE(ud.ok());
  CHECK(ud->starts_with("#cloud-config\nwrite_files:\n"));
  CHECK(ud->find("  - path: /opt/tsum/agent.sh\n    permissions: '0755'\n    encoding: gz+b64\n    content: " +
                 http::base64_encode(http::gzip_compress(spec.agent_script)) + "\n") != std::string::npos);
  CHECK(ud->find(http::base64_encode("TSUM_TOKEN='a'\\''b c'\nTSUM_URL='http://x'\n")) != std::string::npos);
  CHECK(ud->ends_with("runcmd:\n  - [/bin/sh, /opt/tsum/start.sh]\n"));
  auto start_at = ud->find("path: /opt/tsum/start.sh");
  REQUIRE(start_at != std::string::npos);
  auto content_at = ud->find("content: ", start_at) + 9;
  auto start = http::base64_decode(ud->substr(content_at, ud->find('\n', content_at) - content_at));
  REQUIRE(start.ok());
  CHECK(start->find("shutdown -P +90") != std::string::npos);
  CHECK(start->find(". /opt/tsum/agent.env") != std::string::npos);
  CHECK(start->find("setsid /bin/sh /opt/tsum/agent.sh") != std::string::npos);
  CHECK(cloud_init_user_data(spec, {})->find("shutdown") == std::string::npos);  // no lifetime: no timer

  spec.runtime = "docker";
  CHECK(cloud_init_user_data(spec, {})->find("packages:\n  - docker.io\n") != std::string::npos);
}

TEST_CASE("the user data refuses bad directories, environment names, runtimes and sizes, naming them") {
  LaunchSpec spec{.run_id = "3", .agent_script = "#!/bin/sh\n"};
  CHECK(cloud_init_user_data(spec, {.dir = "relative"}).code() == Code::invalid_argument);
  CHECK(cloud_init_user_data(spec, {.dir = "/opt/$(reboot)"}).code() == Code::invalid_argument);
  auto bad_env = spec;
  bad_env.env["1X"] = "y";
  CHECK(cloud_init_user_data(bad_env, {}).error().detail.find("1X") != std::string::npos);
  auto bad_runtime = spec;
  bad_runtime.runtime = "podman";
  CHECK(cloud_init_user_data(bad_runtime, {}).error().detail.find("podman") != std::string::npos);
  spec.agent_script.clear();  // incompressible: gzip cannot bring it under the limit
  for (unsigned x = 1; spec.agent_script.size() < 20000;) spec.agent_script += static_cast<char>((x = x * 1103515245u + 12345u) >> 23);
  CHECK(cloud_init_user_data(spec, {}).error().detail.find("16384") != std::string::npos);
}

TEST_CASE("the agent travels without its comment lines, so that it fits 16 KiB of user data") {
  LaunchSpec spec{.run_id = "3",
                  .agent_script = "#!/bin/sh\n# what follows\nset -u\n  # indented\n\nawk '\n    # awk's own\n"
                                  "    { print }' f  # trailing stays\n"};
  auto ud = cloud_init_user_data(spec, {.dir = "/opt/tsum"});
  REQUIRE(ud.ok());
  CHECK(ud->find(http::base64_encode(http::gzip_compress("#!/bin/sh\nset -u\n\nawk '\n    { print }' f  # trailing stays\n"))) !=
        std::string::npos);
}
