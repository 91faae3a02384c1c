#include <doctest/doctest.h>

#include "daemon/experiments/experiment_spec.h"

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
  CHECK(r->workload().train_args() == "--model mnist_cnn --epochs 1 --limit 2000 --test-limit 1000");
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
  CHECK(error_of(R"({"workload":{"epoch":1},)" + cfg + "}").starts_with("unknown field 'workload.epoch' (kind, model,"));
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
        "workload.image: 'x; reboot' is not an image reference (letters, digits and . / : _ @ - only)");
  std::string many = R"({"workload":{},"configs":[{"provider":"local","cores":[)";
  for (int i = 1; i <= 101; ++i) many += (i > 1 ? "," : "") + std::to_string(i);
  CHECK(error_of(many + "]}]}") == "'configs' times the workload's lists expand to more than 100 configurations");
  // A search takes up to 1,000 candidates (kMaxSearchCandidates), checked the same way.
  const auto configs = [](int n) {
    std::string j = R"({"workload":{},"configs":[{"provider":"local","cores":[)";
    for (int i = 1; i <= n; ++i) j += (i > 1 ? "," : "") + std::to_string(i);
    return nlohmann::json::parse(j + "]}]}");
  };
  auto thousand = experiment_spec_from_json(configs(1000), kMaxSearchCandidates);
  REQUIRE_MESSAGE(thousand.ok(), thousand.error().detail);
  CHECK(thousand->configs.size() == 1000);
  auto over = experiment_spec_from_json(configs(1001), kMaxSearchCandidates);
  REQUIRE_FALSE(over.ok());
  CHECK(over.error().detail == "'configs' times the workload's lists expand to more than 1000 configurations");
}

TEST_CASE("every tsum-train field of a workload reaches the trainer's flags") {
  auto r = parse_experiment_spec(R"({"workload":{"model":"cifar10_cnn","dataset":"cifar-gen","optimizer":"nesterov",
      "lr":0.05,"decay":0.001,"augment":true,"precision":"bf16","device":"cpu","epochs":2,"batch":64,"limit":500,
      "test_limit":100,"threads":2},"configs":[{"provider":"local","cores":2}]})");
  REQUIRE_MESSAGE(r.ok(), r.error().detail);
  CHECK(r->workload().train_args() == "--model cifar10_cnn --epochs 2 --optimizer nesterov --lr 0.05 --decay 0.001 "
                                      "--augment --limit 500 --test-limit 100 --batch 64 --precision bf16 --threads 2");
  CHECK(r->workload().wanted_format() == "cifar10-bin");
  // The device follows the offer when the workload does not say: cuda where there are GPUs.
  auto plain = parse_experiment_spec(R"({"workload":{"model":"resnet50"},"configs":[{"provider":"local","cores":1}]})");
  REQUIRE(plain.ok());
  CHECK(plain->workload().dataset.empty());  // synthetic data: no data set
  CHECK(plain->workload().train_args(0).find("--device") == std::string::npos);
  CHECK(plain->workload().train_args(1).find("--device cuda") != std::string::npos);
}

TEST_CASE("workload lists expand into variants; each run's workload is its own and the varied fields are named") {
  auto r = parse_experiment_spec(R"({"workload":{"model":"mnist_cnn","optimizer":["sgd","momentum","nesterov","rmsprop",
      "adam","adagrad","adadelta","nadam"],"lr":[0.01,0.001]},"configs":[{"provider":"local","cores":[1,2]}],
      "repetitions":1})");
  REQUIRE_MESSAGE(r.ok(), r.error().detail);
  CHECK(r->workloads.size() == 16);
  CHECK(r->variants() == 32);
  CHECK(r->varied == std::vector<std::string>{"optimizer", "lr"});
  // Variant v: configs[v / 16] with workloads[v % 16]; the first listed field varies slowest.
  CHECK(r->config_of(17).instance_type == "local-2c");
  CHECK(*r->workload_of(17).optimizer == "sgd");
  CHECK(*r->workload_of(17).lr == 0.001);
  CHECK(*r->workload_of(31).optimizer == "nadam");
  CHECK(workload_fields(r->workload_of(2), r->varied) == nlohmann::json{{"optimizer", "momentum"}, {"lr", 0.01}});
  auto again = parse_experiment_spec(r->to_json().dump());
  REQUIRE(again.ok());
  CHECK(again->to_json() == r->to_json());
  CHECK(again->variants() == 32);
  CHECK(r->to_json()["workload"]["dataset"] == "fashion-mnist");  // the default, stored explicitly

  // An inference sweep's batch list is the sweep, not alternatives; its mode may vary.
  auto sweep = parse_experiment_spec(R"({"workload":{"kind":"infer","model":"resnet50","batch":[1,2,4],
      "mode":["sync","async"],"source":"files"},"configs":[{"provider":"local","cores":1}]})");
  REQUIRE_MESSAGE(sweep.ok(), sweep.error().detail);
  REQUIRE(sweep->workloads.size() == 2);
  CHECK(sweep->workload_of(1).train_args() == "--model resnet50 --mode async --source files --batch 1,2,4");
  CHECK(sweep->varied == std::vector<std::string>{"mode"});
}

TEST_CASE("bad workload fields are refused naming the field") {
  const std::string cfg = R"(,"configs":[{"provider":"local","cores":1}]})";
  auto err = [&](const std::string& workload) { return error_of(R"({"workload":)" + workload + cfg); };
  CHECK(err(R"({"model":"gpt5"})") ==
        "workload.model: 'gpt5' is not a model (mnist_cnn, mnist_mlp, cifar10_cnn, cifar_small, bilstm, resnet50)");
  CHECK(err(R"({"optimizer":["sgd","adamw"]})").starts_with("workload.optimizer: 'adamw' is not an optimizer (sgd,"));
  CHECK(err(R"({"lr":0})") == "workload.lr: must be above 0 and at most 10");
  CHECK(err(R"({"precision":"fp8"})").starts_with("workload.precision: 'fp8' is not a precision"));
  CHECK(err(R"({"precision":"fp16","device":"cpu"})") == "workload.precision: fp16 runs on cuda only (CPU: fp32 or bf16)");
  CHECK(err(R"({"augment":"yes"})") == "workload.augment: must be true or false");
  CHECK(err(R"({"optimizer":[]})") == "workload.optimizer: must not be an empty list");
  CHECK(err(R"({"kind":["train","infer"]})") == "workload.kind: cannot be a list: make one experiment per kind");
  CHECK(err(R"({"kind":5})").starts_with("workload.kind: "));  // not a type_error (fuzz_experiment_spec)
  CHECK(err(R"({"kind":5,"command":["true"]})").starts_with("workload.kind: "));
  CHECK(err(R"({"model":"cifar10_cnn"})") ==
        "workload.dataset: cifar10_cnn reads a cifar10-bin data set: name a registered one (POST /v1/datasets)");
  CHECK(err(R"({"model":"resnet50","dataset":"fashion-mnist"})") ==
        "workload.dataset: resnet50 trains on synthetic data and reads no data set");
  CHECK(err(R"({"kind":"infer","optimizer":"sgd"})") == "workload.optimizer: is a training field; an infer workload takes none");
  CHECK(err(R"({"mode":"async"})") == "workload.mode: belongs to \"kind\": \"infer\"");
  CHECK(err(R"({"model":"cifar_small","dataset":{"url":"https://x.example/c.tar","format":"idx",
      "sha256":"0000000000000000000000000000000000000000000000000000000000000000"}})") ==
        "workload.dataset: model cifar_small reads format cifar10-bin, but data set 'url' is idx");
  std::string many = R"({"lr":[)";
  for (int i = 1; i <= 11; ++i) many += (i > 1 ? "," : "") + std::to_string(i / 100.0);
  CHECK(err(many + R"(],"optimizer":["sgd","adam","nadam","rmsprop","momentum","adagrad","adadelta","nesterov","sgd","adam"]})")
            .find("expand to more than 100 workloads") != std::string::npos);
}

TEST_CASE("a user's job: image, command and env, never expanded; tsum-train's fields refused") {
  auto r = parse_experiment_spec(R"({"workload":{"image":"reg.example:5000/me/job:1","command":["python3","train.py","--x"],
      "env":{"SEED":"1","NOTE":"it's"},"dataset":"fashion-mnist"},"configs":[{"provider":"local","cores":1}]})");
  REQUIRE_MESSAGE(r.ok(), r.error().detail);
  REQUIRE(r->workloads.size() == 1);  // the command's list is its argv, not alternatives
  const Workload& w = r->workload();
  CHECK(w.kind == "job");
  CHECK(w.command == std::vector<std::string>{"python3", "train.py", "--x"});
  CHECK(w.env.at("NOTE") == "it's");
  CHECK(dataset_fits(w, "files").ok());  // a job reads what it reads
  auto again = parse_experiment_spec(r->to_json().dump());
  REQUIRE(again.ok());
  CHECK(again->to_json() == r->to_json());
  auto two = parse_experiment_spec(R"({"workload":{"image":["a/b:1","a/b:2"],"command":["true"]},
      "configs":[{"provider":"local","cores":1}]})");
  REQUIRE(two.ok());
  CHECK(two->workloads.size() == 2);  // other fields still expand
  CHECK(two->workload_of(1).image == "a/b:2");
  CHECK(two->workload().dataset.empty());  // none unless named

  const std::string cfg = R"(,"configs":[{"provider":"local","cores":1}]})";
  auto err = [&](const std::string& workload) { return error_of(R"({"workload":)" + workload + cfg); };
  CHECK(err(R"({"image":"a/b","command":[]})").starts_with("workload.command: must be a non-empty list"));
  CHECK(err(R"({"image":"a/b","command":[1]})").starts_with("workload.command: must be a non-empty list"));
  CHECK(err(R"({"command":["true"]})") == "workload.image: a job's command runs in a container image: name it");
  CHECK(err(R"({"image":"a/b","command":["true"],"lr":0.1})") ==
        "workload.lr: is tsum-train's; a job takes image, command or workdir, setup and run, env and dataset");
  CHECK(err(R"({"image":"a/b","command":["true"],"env":{"1X":"y"}})").starts_with("workload.env.1X: is not a variable name"));
  CHECK(err(R"({"image":"a/b","command":["true"],"env":{"TSUM_TOKEN":"y"}})") == "workload.env.TSUM_TOKEN: TSUM_ names are the daemon's");
  CHECK(err(R"({"kind":"infer","command":["true"]})").starts_with("workload.command: belongs to a user's job"));
  CHECK(err(R"({"kind":"job","image":"a/b"})").starts_with("workload.run: a job needs what it runs"));
  CHECK(err(R"({"env":{"A":"b"}})") == "workload.env: belongs to a user's job (with a command or a run)");
}

TEST_CASE("a folder job: workdir by its hash, setup and run as shell lines, an image or none") {
  const std::string cfg = R"(,"configs":[{"provider":"local","cores":1}]})";
  auto err = [&](const std::string& workload) { return error_of(R"({"workload":)" + workload + cfg); };
  const std::string sha(64, 'a');
  auto ok = parse_experiment_spec(R"({"workload": {"workdir": "sha256:)" + sha +
                                  R"(", "setup": "pip install -r requirements.txt", "run": ["python3 a.py", "python3 b.py"],
                                  "env": {"X": "1"}})" + cfg);
  REQUIRE_MESSAGE(ok.ok(), ok.error().detail);
  REQUIRE(ok->workloads.size() == 2);  // run's list is two alternatives, as any field's
  CHECK(ok->workloads[0].kind == "job");
  CHECK(ok->workloads[0].workdir_sha256 == sha);
  CHECK(ok->workloads[0].setup == "pip install -r requirements.txt");
  CHECK(ok->workloads[1].run == "python3 b.py");
  CHECK(ok->workloads[0].image.empty());  // on the machine itself
  CHECK(ok->workloads[0].dataset.empty());
  CHECK(ok->workloads[0].to_json()["workdir"] == "sha256:" + sha);
  CHECK(ok->workloads[0].to_json().contains("command") == false);
  CHECK(parse_experiment_spec(R"({"workload": {"run": "echo hi", "image": "a/b"})" + cfg).ok());  // no folder, in an image
  CHECK(err(R"({"workdir": "./job", "run": "x"})").starts_with("workload.workdir: must be \"sha256:HEX\", a folder uploaded with POST /v1/workdirs"));
  CHECK(err(R"({"workdir": "sha256:)" + sha + R"(", "setup": "x"})") == "workload.workdir: goes with \"run\", the shell line the folder's job runs");
  CHECK(err(R"({"run": "x", "command": ["y"], "image": "a/b"})").starts_with("workload.run: a job is a command in an image, or a folder"));
  CHECK(err(R"({"run": ""})").starts_with("workload.run: must be a shell command line of 1 to 65536 bytes"));
  CHECK(err(R"({"run": 5})").starts_with("workload.run: must be a shell command line"));
  CHECK(err(R"({"kind": "train", "run": "x"})").starts_with("workload.run: belongs to a user's job"));
  CHECK(err(R"({"run": "x", "model": "mnist_cnn"})").starts_with("workload.model: is tsum-train's"));
}

TEST_CASE("nodes and dist expand like other config fields; one node has no dist; only training spans nodes") {
  auto r = parse_experiment_spec(R"({"workload": {}, "configs": [{"provider": "aws", "instance_type": "c5.large",
      "nodes": [1, 2, 4], "dist": ["ring", "ps", "ps-async"]}]})");
  REQUIRE(r.ok());
  REQUIRE(r->configs.size() == 7);  // 1 node once, 2 and 4 nodes with each of the three
  CHECK(r->configs[0].nodes == 1);
  CHECK(r->configs[0].dist == "ring");
  CHECK(r->configs[3].nodes == 2);
  CHECK(r->configs[3].dist == "ps-async");
  auto again = parse_experiment_spec(r->to_json().dump());
  REQUIRE(again.ok());
  CHECK(again->to_json() == r->to_json());
  CHECK(error_of(R"({"workload": {}, "configs": [{"provider": "aws", "instance_type": "x", "nodes": 65}]})") ==
        "'configs[0].nodes' must be at most 64, got 65");
  CHECK(error_of(R"({"workload": {}, "configs": [{"provider": "aws", "instance_type": "x", "nodes": 0}]})")
            .find("nodes") != std::string::npos);
  CHECK(error_of(R"({"workload": {}, "configs": [{"provider": "aws", "instance_type": "x", "nodes": 2,
      "dist": "allgather"}]})") == "'configs[0].dist' must be \"ring\", \"ps\" or \"ps-async\", got 'allgather'");
  CHECK(error_of(R"({"workload": {"kind": "infer", "model": "resnet50"}, "configs": [{"provider": "aws",
      "instance_type": "x", "nodes": 2}]})")
            .find("a workload of kind 'infer' runs on one") != std::string::npos);
}

TEST_CASE("market expands like other config fields: on-demand by default, spot when asked; anything else is named") {
  auto r = parse_experiment_spec(R"({"workload": {}, "configs": [{"provider": "gce", "instance_type": "n2-standard-8",
      "market": ["on-demand", "spot"], "nodes": [1, 2]}], "repetitions": 1})");
  REQUIRE(r.ok());
  REQUIRE(r->configs.size() == 4);
  CHECK(r->configs[0].market == "on-demand");
  CHECK(r->configs[1].market == "spot");
  CHECK(r->configs[3].market == "spot");
  CHECK(r->configs[3].nodes == 2);
  CHECK_FALSE(r->to_json()["configs"][0].contains("market"));  // the default is left out
  CHECK(r->to_json()["configs"][1]["market"] == "spot");
  auto again = parse_experiment_spec(r->to_json().dump());
  REQUIRE(again.ok());
  CHECK(again->to_json() == r->to_json());
  auto plain = parse_experiment_spec(R"({"workload": {}, "configs": [{"provider": "aws", "instance_type": "c5.large"}]})");
  REQUIRE(plain.ok());
  CHECK(plain->configs[0].market == "on-demand");
  CHECK(error_of(R"({"workload": {}, "configs": [{"provider": "aws", "instance_type": "x", "market": "preemptible"}]})") ==
        "'configs[0].market' must be \"on-demand\" or \"spot\", got 'preemptible'");
  CHECK(error_of(R"({"workload": {}, "configs": [{"provider": "aws", "instance_type": "x", "market": 1}]})")
            .find("market") != std::string::npos);
}

TEST_CASE("spot_recovery: spot configs only, integers in range, unknown fields named; kept through to_json") {
  auto r = parse_experiment_spec(R"({"workload": {}, "configs": [{"provider": "aws", "instance_type": "c5.large",
      "market": ["spot", "on-demand"], "spot_recovery": {"on_demand_after": 2, "checkpoint_every_s": 60}}]})");
  REQUIRE(r.ok());
  REQUIRE(r->configs.size() == 2);
  CHECK(r->configs[0].spot_recovery.on_demand_after == 2);
  CHECK(r->configs[0].spot_recovery.checkpoint_every_s == 60);
  CHECK(r->configs[0].spot_recovery.max_interruptions == 6);  // the default
  CHECK(r->configs[1].spot_recovery == RunConfig::SpotRecovery{});  // on-demand: none
  CHECK(r->to_json()["configs"][0]["spot_recovery"]["on_demand_after"] == 2);
  CHECK_FALSE(r->to_json()["configs"][1].contains("spot_recovery"));
  auto again = parse_experiment_spec(r->to_json().dump());
  REQUIRE(again.ok());
  CHECK(again->to_json() == r->to_json());
  CHECK(error_of(R"({"workload": {}, "configs": [{"provider": "aws", "instance_type": "x",
      "spot_recovery": {"max_interruptions": 2}}]})") ==
        "'configs[0].spot_recovery' is for spot runs: set 'configs[0].market' to \"spot\"");
  CHECK(error_of(R"({"workload": {}, "configs": [{"provider": "aws", "instance_type": "x", "market": "spot",
      "spot_recovery": {"max_interruptions": -1}}]})") ==
        "'configs[0].spot_recovery.max_interruptions' must be an integer from 0 to 100");
  CHECK(error_of(R"({"workload": {}, "configs": [{"provider": "aws", "instance_type": "x", "market": "spot",
      "spot_recovery": {"zone": "other"}}]})").find("zone") != std::string::npos);
  CHECK(error_of(R"({"workload": {}, "configs": [{"provider": "aws", "instance_type": "x", "market": "spot",
      "spot_recovery": 3}]})") == "'configs[0].spot_recovery' must be an object");
}

TEST_CASE("spot_recovery.zones: 1 to 16 zone names, kept through to_json") {
  auto r = parse_experiment_spec(R"({"workload": {}, "configs": [{"provider": "gce", "instance_type": "e2-small",
      "market": "spot", "spot_recovery": {"zones": ["us-central1-a", "us-central1-b"]}}]})");
  REQUIRE(r.ok());
  CHECK(r->configs[0].spot_recovery.zones == std::vector<std::string>{"us-central1-a", "us-central1-b"});
  CHECK(r->to_json()["configs"][0]["spot_recovery"]["zones"][1] == "us-central1-b");
  auto again = parse_experiment_spec(r->to_json().dump());
  REQUIRE(again.ok());
  CHECK(again->configs[0].spot_recovery == r->configs[0].spot_recovery);
  for (const char* bad : {R"([])", R"("us-central1-a")", R"([""])", R"(["a b"])", R"(["us/central"])", R"([1])"})
    CHECK(error_of(std::string(R"({"workload": {}, "configs": [{"provider": "gce", "instance_type": "x", "market": "spot",
        "spot_recovery": {"zones": )") + bad + "}}]}")
              .find("'configs[0].spot_recovery.zones' must be a list of 1 to 16 zone names") == 0);
}

TEST_CASE("a serving workload: two machines a run, one sweep, the server's and the client's flags, errors named") {
  auto r = parse_experiment_spec(R"({"workload": {"kind": "serve", "model": "mnist_cnn", "max_batch": [1, 8],
      "max_delay_ms": 2, "input": "jpeg", "concurrency": [1, 4], "bound_ms": 50},
      "configs": [{"provider": "aws", "instance_type": ["c5.large", "c5.xlarge"]}]})");
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().detail));
  CHECK(r->workloads.size() == 2);  // max_batch's two values are alternatives; concurrency is the sweep
  REQUIRE(r->configs.size() == 2);
  CHECK(r->configs[0].nodes == 2);  // the server and its load client
  auto fits = parse_experiment_spec(R"({"workload": {"kind": "serve", "model": "mnist_cnn", "max_batch": 8,
      "batch": 2, "concurrency": [1, 4], "bound_ms": 50, "input": "jpeg"},
      "configs": [{"provider": "aws", "instance_type": "c5.large", "nodes": 2}]})");
  REQUIRE_MESSAGE(fits.ok(), (fits.ok() ? "" : fits.error().detail));
  const auto& w = fits->workload();
  CHECK(w.dataset.empty());
  CHECK(w.train_args() == "--model mnist_cnn --max-batch 8 --max-delay-ms 0");
  CHECK(w.load_args() == "--model mnist_cnn --batch 2 --concurrency 1,4 --bound-ms 50");
  auto again = parse_experiment_spec(fits->to_json().dump());
  REQUIRE_MESSAGE(again.ok(), (again.ok() ? "" : again.error().detail));
  CHECK(again->to_json() == fits->to_json());
  CHECK_FALSE(fits->to_json()["configs"][0].contains("dist"));

  auto rate = parse_experiment_spec(R"({"workload": {"kind": "serve", "model": "resnet50", "rate": [10, 12.5],
      "arrivals": "constant", "window_s": 3}, "configs": [{"provider": "local", "cores": 2}]})");
  REQUIRE(rate.ok());
  CHECK(rate->workload().load_args() == "--model resnet50 --batch 1 --rate 10,12.5 --arrivals constant --window-s 3");
  auto plain = parse_experiment_spec(R"({"workload": {"kind": "serve"}, "configs": [{"provider": "local", "cores": 1}]})");
  REQUIRE(plain.ok());
  CHECK(plain->workload().load_args() == "--model mnist_cnn --batch 1 --concurrency 1,2,4,8");

  auto delay = parse_experiment_spec(R"({"workload": {"kind": "serve", "model": "delay", "service_ms": 20,
      "max_batch": 1}, "configs": [{"provider": "local", "cores": 1}]})");
  REQUIRE(delay.ok());
  CHECK(delay->workload().train_args() == "--model delay --max-batch 1 --max-delay-ms 0 --service-ms 20");

  auto err = [](const std::string& workload, const std::string& config = R"({"provider":"local","cores":1})") {
    return error_of(R"({"workload":)" + workload + R"(,"configs":[)" + config + "]}");
  };
  CHECK(err(R"({"kind":"serve","concurrency":[1],"rate":[5]})") ==
        "workload.rate: a sweep is of concurrency or of request rate, not both");
  CHECK(err(R"({"kind":"serve","arrivals":"poisson"})") == "workload.arrivals: is for a request-rate sweep (\"rate\")");
  CHECK(err(R"({"kind":"serve","batch":9})") ==
        "workload.batch: a request of 9 images does not fit the server's max_batch 8");
  CHECK(err(R"({"kind":"serve","dataset":"fashion-mnist"})").starts_with("workload.dataset: a serving run reads no data set"));
  CHECK(err(R"({"kind":"serve","epochs":2})") == "workload.epochs: is a training field; a serve workload takes none");
  CHECK(err(R"({"kind":"serve","mode":"async"})") == "workload.mode: belongs to \"kind\": \"infer\"");
  CHECK(err(R"({"max_batch":4})") == "workload.max_batch: belongs to \"kind\": \"serve\"");
  CHECK(err(R"({"kind":"serve","model":"bilstm"})").starts_with("workload.model: bilstm reads tokens"));
  CHECK(err(R"({"kind":"serve","rate":[0]})") == "workload.rate: must be above 0 and at most 1e+06");
  CHECK(err(R"({"kind":"serve","concurrency":[]})") == "workload.concurrency: must list 1 to 64 levels");
  CHECK(err(R"({"kind":"serve","service_ms":5})").starts_with("workload.service_ms: goes with model \"delay\""));
  CHECK(err(R"({"kind":"serve","model":"delay"})").starts_with("workload.service_ms: goes with model \"delay\""));
  CHECK(err(R"({"model":"delay"})").starts_with("workload.model: 'delay' is not a model"));
  CHECK(err(R"({"kind":"serve","input":"png"})").starts_with("workload.input: 'png' is not a serving input"));
  CHECK(err(R"({"kind":"serve"})", R"({"provider":"aws","instance_type":"x","nodes":3})")
            .find("a serving run is two machines") != std::string::npos);
  CHECK(err(R"({"kind":"serve"})", R"({"provider":"aws","instance_type":"x","dist":"ps"})")
            .find("there is no 'dist'") != std::string::npos);
}

TEST_CASE("spot_recovery.policy and max_price: checked at the door, kept through to_json") {
  auto r = parse_experiment_spec(R"({"workload": {}, "configs": [{"provider": "aws", "instance_type": "t3.micro",
      "market": "spot", "spot_recovery": {"policy": "cloud", "max_price": 0.05}}]})");
  REQUIRE(r.ok());
  CHECK(r->configs[0].spot_recovery.policy == "cloud");
  CHECK(*r->configs[0].spot_recovery.max_price == 0.05);
  auto again = parse_experiment_spec(r->to_json().dump());
  REQUIRE(again.ok());
  CHECK(again->configs[0].spot_recovery == r->configs[0].spot_recovery);
  CHECK(parse_experiment_spec(R"({"workload": {}, "configs": [{"provider": "aws", "instance_type": "x",
      "market": "spot"}]})")->configs[0].spot_recovery.policy == "zone");  // the default
  auto bad = [](const std::string& recovery) {
    return error_of(R"({"workload": {}, "configs": [{"provider": "aws", "instance_type": "x", "market": "spot",
        "spot_recovery": )" + recovery + "}]}");
  };
  CHECK(bad(R"({"policy": "anywhere"})").find("'configs[0].spot_recovery.policy' must be \"zone\"") == 0);
  CHECK(bad(R"({"policy": 1})").find("'configs[0].spot_recovery.policy' must be") == 0);
  CHECK(bad(R"({"policy": "region", "zones": ["us-east-1a"]})").find("goes with policy \"zone\"") != std::string::npos);
  for (const char* price : {"0", "-1", "1e9", "\"cheap\"", "null"})
    CHECK(bad(std::string(R"({"max_price": )") + price + "}").find("'configs[0].spot_recovery.max_price' must be") == 0);
}
