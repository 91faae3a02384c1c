// The client's URL parsing and the precedence of flags, environment and config file, without a daemon.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>

#include "api/cli/cli_context.h"
#include "api/cli/cli_http.h"
#include "cli/cli_process.h"

using namespace tsum;
using namespace tsum::testing;

TEST_CASE("parse_url takes http://HOST[:PORT][/PREFIX] and names what is wrong") {
  auto u = api::parse_url("http://127.0.0.1:9000/tsum/");
  REQUIRE(u.ok());
  CHECK(u->host == "127.0.0.1");
  CHECK(u->port == 9000);
  CHECK(u->base_path == "/tsum");
  CHECK(api::parse_url("http://example.org")->port == 8080);
  auto v6 = api::parse_url("http://[::1]:8081");
  CHECK(v6->host == "::1");
  CHECK(v6->port == 8081);
  CHECK(api::parse_url("https://x").error().detail ==
        "URL 'https://x': must start with http:// (tsumd serves plain HTTP)");
  CHECK(api::parse_url("http://:80").error().detail == "URL 'http://:80': no host");
  CHECK(api::parse_url("http://h:0").error().detail == "URL 'http://h:0': the port must be a number from 1 to 65535");
  CHECK(!api::parse_url("http://h:x").ok());
  CHECK(!api::parse_url("http://[::1").ok());
}

TEST_CASE("resolve_config: flags, then environment, then the config file, then the default URL") {
  TempDir dir;
  const std::string file = dir.file("client.json");
  std::map<std::string, std::string> vars;
  auto env = [&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  auto none = api::resolve_config(std::nullopt, std::nullopt, env, file);
  CHECK(none->url == "http://127.0.0.1:8080");
  CHECK(none->token.empty());

  write_file(file, R"({"url": "http://file:1", "token": "from-file"})");
  auto from_file = api::resolve_config(std::nullopt, std::nullopt, env, file);
  CHECK(from_file->host == "file");
  CHECK(from_file->token == "from-file");

  vars = {{"TSUM_URL", "http://env:2"}, {"TSUM_TOKEN", "from-env"}};
  auto from_env = api::resolve_config(std::nullopt, std::nullopt, env, file);
  CHECK(from_env->host == "env");
  CHECK(from_env->token == "from-env");

  auto from_flags = api::resolve_config("http://flag:3", "from-flag", env, file);
  CHECK(from_flags->host == "flag");
  CHECK(from_flags->port == 3);
  CHECK(from_flags->token == "from-flag");

  write_file(file, R"({"url": "http://file:1", "colour": "red"})");
  auto unknown = api::resolve_config(std::nullopt, std::nullopt, env, file);
  CHECK(unknown.error().detail == "config file " + file + ": unknown field 'colour'");
  write_file(file, "not json");
  CHECK(api::resolve_config("http://flag:3", "t", env, file).error().detail ==
        "config file " + file + " is not a JSON object");
}

TEST_CASE("exit codes for daemon answers") {
  CHECK(api::exit_code_for(401) == api::kExitAuth);
  CHECK(api::exit_code_for(404) == api::kExitNotFound);
  CHECK(api::exit_code_for(400) == api::kExitUsage);
  CHECK(api::exit_code_for(422) == api::kExitUsage);
  CHECK(api::exit_code_for(409) == api::kExitFailure);
  CHECK(api::exit_code_for(500) == api::kExitFailure);
}

TEST_CASE("a run's progress line counts epochs for training only") {
  nlohmann::json run = {{"id", 3}, {"config", {{"instance_type", "local-1c"}}}, {"repetition", 1},
                        {"status", "learning"}, {"epochs", nlohmann::json::array()}, {"reason", ""},
                        {"workload", {{"kind", "train"}, {"epochs", 2}}}};
  CHECK(api::cli::progress_line(run, 2) == "run 3 local-1c #1: learning (epoch 1/2)");
  run["workload"] = {{"kind", "serve"}, {"model", "delay"}};
  CHECK(api::cli::progress_line(run, 1) == "run 3 local-1c #1: learning (serving)");
  run["workload"] = {{"kind", "infer"}};
  CHECK(api::cli::progress_line(run, 1) == "run 3 local-1c #1: learning (sweep)");
}
