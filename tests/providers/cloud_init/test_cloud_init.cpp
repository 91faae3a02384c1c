// The boot payload every adapter sends: what it writes and runs, and what it refuses.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "providers/cloud_init/cloud_init.h"
#include "providers/http/codec.h"
#include "tests/fakes/http/loopback_server.h"
#include "support/temp_dir.h"
#include "support/test_tls.h"

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

  // A spot machine's agent is told which notice to watch, and where when the config names a stand-in; an
  // on-demand one, or a cloud that gives none, is told nothing.
  auto env_of = [](const Result<std::string>& ud) {
    REQUIRE(ud.ok());
    auto at = ud->find("content: ", ud->find("path: /opt/tsum/agent.env")) + 9;
    auto env = http::base64_decode(ud->substr(at, ud->find('\n', at) - at));
    REQUIRE(env.ok());
    return *env;
  };
  CloudInitOptions spot{.spot_notice = "aws", .metadata_url = "http://10.1.2.3:8080"};
  CHECK(env_of(cloud_init_user_data(spec, spot)).find("TSUM_SPOT_NOTICE") == std::string::npos);
  spec.market = "spot";
  CHECK(env_of(cloud_init_user_data(spec, spot)) ==
        "TSUM_METADATA_URL='http://10.1.2.3:8080'\nTSUM_SPOT_NOTICE='aws'\nTSUM_TOKEN='a'\\''b c'\nTSUM_URL='http://x'\n");
  CHECK(env_of(cloud_init_user_data(spec, {})).find("TSUM_SPOT_NOTICE") == std::string::npos);
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

namespace {

// Runs the boot payload's agent.sh as the start script would (in <dir>/work, with the environment), waits for it.
int run_agent_sh(const std::string& dir, const std::map<std::string, std::string>& env) {
  std::string cmd = "cd " + dir + "/work && env -i PATH=/usr/bin:/bin";
  for (const auto& [k, v] : env) cmd += " " + k + "='" + v + "'";
  cmd += " /bin/sh " + dir + "/agent.sh >" + dir + "/agent.log 2>&1";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Writes the user data's agent.sh (base64, or gz+b64) under dir, as cloud-init would.
void write_agent_sh(const std::string& ud, const std::string& dir) {
  auto at = ud.find("path: " + dir + "/agent.sh\n");
  REQUIRE(at != std::string::npos);
  const bool gz = ud.find("encoding: gz+b64", at) < ud.find("content: ", at);
  at = ud.find("content: ", at) + 9;
  auto bytes = http::base64_decode(ud.substr(at, ud.find('\n', at) - at));
  REQUIRE(bytes);
  std::filesystem::create_directories(dir + "/work");
  std::ofstream(dir + "/agent.sh") << (gz ? *http::gzip_decompress(*bytes) : *bytes);
}

}  // namespace

TEST_CASE("the bootstrap fetches the agent over TLS with the run token, retries refusals and wrong bytes, runs it") {
  testing::TestTls tls;
  testing::TempDir dir("tsum-boot");
  const std::string agent = "#!/bin/sh\necho \"ran in $(pwd) for run $TSUM_RUN_ID\" > ran.txt\n";
  const std::string sha = http::sha256_hex(agent);
  std::vector<std::string> seen;
  http::LoopbackServer server([&](const http::LoopbackRequest& r) -> http::LoopbackReply {
    seen.push_back(r.method + " " + r.target + " " + std::string(http::find_header(r.headers, "authorization").value_or("")));
    if (seen.size() == 1) return {.status = 503, .body = "busy"};
    if (seen.size() == 2) return {.status = 200, .body = agent + "echo tampered\n"};
    return {.status = 200, .body = agent};
  });
  auto port = server.start({.cert_file = tls.cert_file(), .key_file = tls.key_file()});
  REQUIRE(port);
  LaunchSpec spec{.run_id = "3", .agent_script = agent, .agent_sha256 = sha};
  auto ud = cloud_init_user_data(spec, {.dir = dir.path().string()});
  REQUIRE(ud);
  write_agent_sh(*ud, dir.path().string());
  const int rc = run_agent_sh(dir.path().string(), {{"TSUM_URL", server.base_url()}, {"TSUM_RUN_ID", "3"},
                                                    {"TSUM_TOKEN", "tok"}, {"TSUM_CA_PEM", read_file(tls.ca_file())}});
  INFO(read_file(dir.file("agent.log")));
  CHECK(rc == 0);
  CHECK(read_file(dir.file("work/ran.txt")) == "ran in " + dir.file("work") + " for run 3\n");
  CHECK(read_file(dir.file("agent-full.sh")) == agent);
  REQUIRE(seen.size() == 3);
  for (const auto& s : seen) CHECK(s == "GET /v1/blobs/" + sha + " Bearer tok");
}

TEST_CASE("a bootstrap that cannot fetch the agent tells the daemon why, as an install error, and exits") {
  testing::TempDir dir("tsum-boot");
  std::vector<http::LoopbackRequest> seen;
  http::LoopbackServer server([&](const http::LoopbackRequest& r) -> http::LoopbackReply {
    seen.push_back(r);
    if (r.method == "GET") return {.status = 401, .body = R"({"error":"unauthenticated"})"};
    return {.status = 201, .body = "{}"};
  });
  REQUIRE(server.start({}));
  LaunchSpec spec{.run_id = "3", .agent_script = "#!/bin/sh\n", .agent_sha256 = http::sha256_hex("#!/bin/sh\n")};
  auto ud = cloud_init_user_data(spec, {.dir = dir.path().string()});
  REQUIRE(ud);
  write_agent_sh(*ud, dir.path().string());
  const int rc = run_agent_sh(dir.path().string(), {{"TSUM_URL", server.base_url()}, {"TSUM_RUN_ID", "3"},
                                                    {"TSUM_TOKEN", "tok"}, {"TSUM_BOOT_FETCH_S", "2"}});
  INFO(read_file(dir.file("agent.log")));
  CHECK(rc == 1);
  REQUIRE(seen.size() >= 3);  // tried again (1 s, then 2 s), then reported
  CHECK(seen.back().method == "POST");
  CHECK(seen.back().target == "/v1/runs/3/events");
  auto event = nlohmann::json::parse(seen.back().body, nullptr, false);
  REQUIRE_FALSE(event.is_discarded());
  CHECK(event["phase"] == "install");
  CHECK(event["mark"] == "error");
  CHECK(event["mono_s"].get<double>() > 0);
  const std::string detail = event["attrs"]["detail"];
  CHECK(detail.find("the agent could not be fetched from " + server.base_url() + "/v1/blobs/") == 0);
  CHECK(detail.find("401") != std::string::npos);
}
