#include <doctest/doctest.h>

#include "daemon/experiment_spec.h"

using namespace tsum;
using namespace tsum::daemon;

namespace {
std::string error_of(std::string_view body) {
  auto r = parse_experiment_spec(body);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Code::invalid_argument);
  return r.error().detail;
}
}  // namespace

TEST_CASE("the issue's example body parses with its defaults") {
  auto r = parse_experiment_spec(R"({"name": "q", "workload": {"model": "mnist_cnn", "dataset": "fashion-mnist",
      "epochs": 1, "limit": 2000, "test_limit": 1000}, "configs": [{"provider": "local", "instance_type": "local-1c"},
      {"provider": "local", "instance_type": "local-2c"}], "repetitions": 1,
      "billing": ["per_second_60s_min", "per_minute", "per_10_minutes", "per_hour"]})");
  REQUIRE(r.ok());
  CHECK(r->configs.size() == 2);
  CHECK(r->billing.size() == 4);
  CHECK(r->workload.train_args() == "--model mnist_cnn --epochs 1 --limit 2000 --test-limit 1000");
  // Round trip through the stored form.
  auto again = parse_experiment_spec(r->to_json().dump());
  REQUIRE(again.ok());
  CHECK(again->to_json() == r->to_json());

  auto minimal = parse_experiment_spec(R"({"workload":{},"configs":[{"provider":"local","instance_type":"local-1c"}]})");
  REQUIRE(minimal.ok());
  CHECK(minimal->repetitions == 10);  // as the seed ran every configuration
  CHECK(minimal->billing.size() == 4);
}

TEST_CASE("malformed or invalid bodies name what is wrong") {
  CHECK(error_of("{") == "malformed JSON");
  CHECK(error_of("") == "malformed JSON");
  CHECK(error_of(std::string(100000, '[')) == "malformed JSON");  // too deep: refused before parsing
  CHECK(error_of("[]") == "the body must be a JSON object");
  const std::string cfg = R"("configs":[{"provider":"local","instance_type":"local-1c"}])";
  CHECK(error_of(R"({"workload":{},)" + cfg + R"(,"colour":"red"})") == "unknown field 'colour'");
  CHECK(error_of(R"({"workload":{"epoch":1},)" + cfg + "}") == "unknown field 'workload.epoch'");
  CHECK(error_of(R"({"workload":{"epochs":0},)" + cfg + "}").find("workload.epochs") != std::string::npos);
  CHECK(error_of(R"({"workload":{"epochs":"1"},)" + cfg + "}").find("integer") != std::string::npos);
  CHECK(error_of(R"({"workload":{"model":"gpt5"},)" + cfg + "}").find("gpt5") != std::string::npos);
  CHECK(error_of(R"({"workload":{},"configs":[]})") == "'configs' must be a non-empty array");
  CHECK(error_of(R"({"workload":{},"configs":[{"provider":"local"}]})") ==
        "'configs[0]' needs exactly one of 'instance_type' and 'cores'");
  CHECK(error_of(R"({"workload":{},"configs":[{"provider":"aws","cores":[2]}]})") ==
        "'configs[0].cores' works for the local provider only; name an 'instance_type'");
  CHECK(error_of(R"({"workload":{},"configs":[{"provider":"local","instance_type":"x","zone":"a"}]})") ==
        "unknown field 'configs[0].zone'");
  CHECK(error_of(R"({"workload":{},)" + cfg + R"(,"billing":["per_week"]})").find("per_week") != std::string::npos);
  CHECK(error_of(R"({"workload":{},)" + cfg + R"(,"repetitions":0})").find("repetitions") != std::string::npos);
  CHECK(error_of(R"({)" + cfg + "}") == "missing field 'workload'");
}

TEST_CASE("a config with lists expands to their product, in order") {
  auto r = parse_experiment_spec(R"({"workload":{"image":"ghcr.io/me/tsum-train:1.0"},"configs":[
      {"provider":"local","cores":[1,2],"runtime":["native","docker"]},
      {"provider":"aws","instance_type":["c6i.2xlarge","g5.xlarge"]}]})");
  REQUIRE_MESSAGE(r.ok(), r.error().detail);
  std::vector<std::string> got;
  for (const auto& c : r->configs) got.push_back(c.provider + "/" + c.instance_type + "/" + c.runtime);
  CHECK(got == std::vector<std::string>{"local/local-1c/native", "local/local-1c/docker", "local/local-2c/native",
                                        "local/local-2c/docker", "aws/c6i.2xlarge/native", "aws/g5.xlarge/native"});
  // The stored form is the expanded list and parses back to itself.
  auto again = parse_experiment_spec(r->to_json().dump());
  REQUIRE(again.ok());
  CHECK(again->to_json() == r->to_json());

  CHECK(error_of(R"({"workload":{},"configs":[{"provider":"local","cores":[]}]})") ==
        "'configs[0].cores' must not be an empty list");
  CHECK(error_of(R"({"workload":{},"configs":[{"provider":"local","cores":["2"]}]})") ==
        "'configs[0].cores' must be a positive integer or a list of them");
  CHECK(error_of(R"({"workload":{},"configs":[{"provider":"local","cores":1,"runtime":"podman"}]})") ==
        "'configs[0].runtime' must be \"native\" or \"docker\", got 'podman'");
  CHECK(error_of(R"({"workload":{},"configs":[{"provider":"aws","instance_type":"c5.large","runtime":["native","docker"]}]})") ==
        "a docker runtime (configuration 1) needs 'workload.image', the registry image built from tsum's Dockerfile");
  CHECK(error_of(R"({"workload":{"image":"x; reboot"},"configs":[{"provider":"local","cores":1}]})") ==
        "workload.image 'x; reboot' is not an image reference (letters, digits and . / : _ @ - only)");
  std::string many = R"({"workload":{},"configs":[{"provider":"local","cores":[)";
  for (int i = 1; i <= 101; ++i) many += (i > 1 ? "," : "") + std::to_string(i);
  CHECK(error_of(many + "]}]}") == "'configs' expands to more than 100 configurations");
}
