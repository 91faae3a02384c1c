// End-to-end tests: run the real tsum-train binary on real data and check its event stream.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "temp_dir.h"
#include "workload/machine/cpus.h"
#include "workload/train/options.h"

using namespace tsum::workload::testing;

namespace {

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs tsum-train with `args` (already shell-quoted where needed); stderr goes through a file.
RunResult run_train(const TempDir& dir, const std::string& args) {
  const std::string err_path = dir.file("stderr.txt");
  const std::string cmd = std::string("'") + TSUM_TRAIN_BIN + "' " + args + " 2>'" + err_path + "'";
  RunResult r;
  std::FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  const auto err = read_all(err_path);
  r.err.assign(err.begin(), err.end());
  return r;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

bool has(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

std::vector<nlohmann::json> events_of(const std::string& out) {
  std::vector<nlohmann::json> events;
  for (const auto& line : lines_of(out)) events.push_back(nlohmann::json::parse(line));
  return events;
}

std::vector<std::string> names_of(const std::vector<nlohmann::json>& events) {
  std::vector<std::string> names;
  for (const auto& e : events) names.push_back(e["event"].get<std::string>());
  return names;
}

}  // namespace

TEST_CASE("tsum-train: a tiny real run emits ready, epochs, learn_end, verify, saved in order") {
  TempDir dir;
  const std::string ckpt = dir.file("model.pt");
  const auto r = run_train(dir, "--limit 512 --epochs 2 --threads 1 --test-limit 300 --checkpoint '" +
                                    ckpt + "' --data " + TSUM_FASHION_MNIST_DIR);
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const auto lines = lines_of(r.out);
  REQUIRE(lines.size() == 6);

  const std::vector<std::string> expected = {"ready", "epoch", "epoch", "learn_end", "verify", "saved"};
  std::vector<nlohmann::ordered_json> events;
  double last_mono = 0.0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    CAPTURE(lines[i]);
    // The agent's sed script relies on this exact prefix.
    CHECK(lines[i].rfind("{\"event\":\"" + expected[i] + "\",\"mono_s\":", 0) == 0);
    auto j = nlohmann::ordered_json::parse(lines[i]);
    REQUIRE(j.is_object());
    auto it = j.begin();
    CHECK(it.key() == "event");
    ++it;
    CHECK(it.key() == "mono_s");
    for (const auto& [key, value] : j.items()) CHECK_FALSE(value.is_structured());
    const double mono = j["mono_s"].get<double>();
    CHECK(mono >= last_mono);
    last_mono = mono;
    events.push_back(std::move(j));
  }

  const auto& ready = events[0];
  CHECK(ready["model"] == "mnist_cnn");
  CHECK(ready["params"] == 1199882);
  CHECK(ready["threads"] == 1);
  CHECK(ready["train_images"] == 512);
  CHECK(ready["test_images"] == 300);
  CHECK(ready["device"] == "cpu");
  CHECK(ready["dataset"] == "idx");
  CHECK(ready["optimizer"] == "adam");
  CHECK(ready["batch"] == 128);
  CHECK(ready["lr"].get<double>() == doctest::Approx(0.001));

  for (int e = 1; e <= 2; ++e) {
    const auto& epoch = events[static_cast<std::size_t>(e)];
    CHECK(epoch["epoch"] == e);
    CHECK(epoch["epochs"] == 2);
    REQUIRE(epoch["loss"].is_number());
    CHECK(std::isfinite(epoch["loss"].get<double>()));
    CHECK(epoch["loss"].get<double>() > 0.0);
    CHECK(epoch["train_accuracy"].get<double>() >= 0.0);
    CHECK(epoch["train_accuracy"].get<double>() <= 1.0);
    CHECK(epoch["images_per_s"].get<double>() > 0.0);
    CHECK(epoch["seconds"].get<double>() > 0.0);
  }
  CHECK(events[2]["loss"].get<double>() < events[1]["loss"].get<double>());

  CHECK(events[3]["epochs"] == 2);
  CHECK(events[3]["seconds"].get<double>() > 0.0);
  CHECK(events[3]["images_per_s"].get<double>() > 0.0);

  // 2 epochs of 512 images already beat chance (10%) by a wide margin on Fashion-MNIST.
  CHECK(events[4]["test_accuracy"].get<double>() > 0.4);
  CHECK(std::isfinite(events[4]["test_loss"].get<double>()));
  CHECK(events[4]["test_images"] == 300);

  CHECK(events[5]["path"] == ckpt);
  REQUIRE(std::filesystem::exists(ckpt));
  CHECK(events[5]["bytes"] == static_cast<std::int64_t>(std::filesystem::file_size(ckpt)));
  CHECK(events[5]["bytes"].get<std::int64_t>() > 4 * 1199882);
}

TEST_CASE("tsum-train: default threads follow the affinity mask") {
  TempDir dir;
  const auto r = run_train(dir, "--limit 128 --test-limit 100 --checkpoint '" + dir.file("m.pt") + "' --data " +
                                    TSUM_FASHION_MNIST_DIR);
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const auto ready = nlohmann::json::parse(lines_of(r.out).at(0));
  CHECK(ready["threads"] == tsum::workload::usable_cpu_count());
}

TEST_CASE("tsum-train: bad data exits 2 naming the file, with nothing on stdout") {
  TempDir dir;
  const std::string images = dir.file("train-images-idx3-ubyte.gz");
  write_gz(images, idx_images(60000, 28, 28, 1000));
  write_gz(dir.file("train-labels-idx1-ubyte.gz"), idx_labels(60000, 60000));
  const auto r = run_train(dir, "--data '" + dir.path().string() + "' --checkpoint '" +
                                    dir.file("m.pt") + "'");
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(has(r.err, images + ": truncated"));
}

TEST_CASE("tsum-train: missing data directory exits 2 naming the file") {
  TempDir dir;
  const auto r = run_train(dir, "--data '" + dir.file("absent") + "'");
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(has(r.err, dir.file("absent") + "/train-images-idx3-ubyte.gz"));
}

TEST_CASE("tsum-train: bad usage exits 2 with usage on stderr; --help exits 0") {
  TempDir dir;
  for (const std::string args : {"--bogus 1", "--epochs 0", "--model nope", "--optimizer nope",
                                 "--dataset nope", "--decay -1", "--image-size 8",
                                 "--model mnist_cnn --classes 5", "gen-cifar", "gen-tokens --n 5",
                                 "gen-cifar /tmp/x --bogus 2"}) {
    CAPTURE(args);
    const auto r = run_train(dir, args + " --data /nonexistent");
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK_FALSE(r.err.empty());
  }
  CHECK(has(run_train(dir, "--bogus 1").err, "usage: tsum-train"));
  CHECK(has(run_train(dir, "gen-cifar").err, "gen-cifar: missing DIR"));
  const auto help = run_train(dir, "--help");
  CHECK(help.exit_code == 0);
  for (const char* text : {"--checkpoint", "--dataset", "--optimizer", "--decay", "--augment",
                           "--classes", "--image-size", "gen-cifar DIR", "gen-tokens DIR",
                           "resnet50", "nadam", "synthetic"}) {
    CAPTURE(text);
    CHECK(has(help.out, text));
  }
}

TEST_CASE("tsum-train: gen-cifar data trains cifar10_cnn with its Keras defaults") {
  TempDir dir;
  const std::string data = dir.file("cifar");
  const auto gen = run_train(dir, "gen-cifar '" + data + "' --n 320 --seed 3");
  INFO("stderr: " << gen.err);
  REQUIRE(gen.exit_code == 0);
  CHECK(has(gen.out, "wrote 320 training and 64 test examples"));
  CHECK(std::filesystem::file_size(data + "/data_batch_5.bin") == 64 * 3073);

  const std::string ckpt = dir.file("cifar.pt");
  const auto r = run_train(dir, "--model cifar10_cnn --data '" + data +
                                    "' --epochs 3 --threads 2 --checkpoint '" + ckpt + "'");
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const auto events = events_of(r.out);
  const std::vector<std::string> expected = {"ready", "epoch", "epoch", "epoch",
                                             "learn_end", "verify", "saved"};
  REQUIRE(names_of(events) == expected);
  const auto& ready = events[0];
  CHECK(ready["model"] == "cifar10_cnn");
  CHECK(ready["params"] == 1250858);
  CHECK(ready["dataset"] == "cifar10");
  CHECK(ready["optimizer"] == "rmsprop");
  CHECK(ready["batch"] == 32);
  CHECK(ready["lr"].get<double>() == doctest::Approx(1e-4));
  CHECK(ready["train_images"] == 320);
  CHECK(ready["test_images"] == 64);
  CHECK(events[3]["loss"].get<double>() < events[1]["loss"].get<double>());
  CHECK(events[5]["test_images"] == 64);
  CHECK(events[5]["test_accuracy"].get<double>() > 0.2);  // chance is 0.1
  CHECK(events[6]["path"] == ckpt);
  CHECK(events[6]["bytes"].get<std::int64_t>() > 4 * 1250858);
}

TEST_CASE("tsum-train: cifar10_cnn with augmentation, another optimizer and decay") {
  TempDir dir;
  const std::string data = dir.file("cifar");
  REQUIRE(run_train(dir, "gen-cifar '" + data + "' --n 64").exit_code == 0);
  const auto r = run_train(dir, "--model cifar10_cnn --data '" + data +
                                    "' --augment --optimizer nadam --decay 0.01 --batch 16 "
                                    "--threads 1 --checkpoint '" + dir.file("m.pt") + "'");
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const auto events = events_of(r.out);
  REQUIRE(events.size() == 5);
  CHECK(events[0]["optimizer"] == "nadam");
  CHECK(events[0]["lr"].get<double>() == doctest::Approx(0.002));  // nadam's own default
  CHECK(events[0]["batch"] == 16);
}

TEST_CASE("tsum-train: gen-tokens data trains bilstm") {
  TempDir dir;
  const std::string data = dir.file("tokens");
  REQUIRE(run_train(dir, "gen-tokens '" + data + "' --n 96").exit_code == 0);
  const auto r = run_train(dir, "--model bilstm --data '" + data + "' --epochs 2 --threads 2 "
                                "--checkpoint '" + dir.file("m.pt") + "'");
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const auto events = events_of(r.out);
  REQUIRE(names_of(events).size() == 6);
  CHECK(events[0]["model"] == "bilstm");
  CHECK(events[0]["dataset"] == "tokens");
  CHECK(events[0]["train_images"] == 96);
  CHECK(events[0]["test_images"] == 20);
  const std::int64_t params = events[0]["params"].get<std::int64_t>();
  CHECK((params - 99457) % 128 == 0);  // 128 embedding values per id
  CHECK((params - 99457) / 128 <= 2000);
  CHECK(std::isfinite(events[4]["test_loss"].get<double>()));

  const auto augment = run_train(dir, "--model bilstm --data '" + data + "' --augment");
  CHECK(augment.exit_code == 2);
  CHECK(has(augment.err, "--augment transforms images"));
}

TEST_CASE("tsum-train: resnet50 trains on synthetic data of a chosen size and class count") {
  TempDir dir;
  const auto r = run_train(dir, "--model resnet50 --image-size 32 --classes 10 --limit 8 "
                                "--test-limit 4 --batch 4 --threads 2 --checkpoint '" +
                                    dir.file("r.pt") + "'");
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const auto events = events_of(r.out);
  REQUIRE(events.size() == 5);
  CHECK(events[0]["dataset"] == "synthetic");
  CHECK(events[0]["optimizer"] == "momentum");
  CHECK(events[0]["params"] == 25557032 - 2049000 + 20490);
  CHECK(events[0]["train_images"] == 8);
  CHECK(events[3]["test_images"] == 4);
}

TEST_CASE("tsum-train: bad CIFAR data exits 2 naming the file, with nothing on stdout") {
  TempDir dir;
  const std::string data = dir.file("cifar");
  REQUIRE(run_train(dir, "gen-cifar '" + data + "' --n 10").exit_code == 0);
  const auto mismatch = run_train(dir, "--model mnist_cnn --dataset cifar10 --data '" + data + "'");
  CHECK(mismatch.exit_code == 2);
  CHECK(mismatch.out.empty());
  CHECK(has(mismatch.err, "images are 3x32x32, model mnist_cnn expects 1x28x28"));

  auto bytes = read_all(data + "/data_batch_2.bin");
  bytes[3073] = 200;  // record 1's label byte
  write_raw(data + "/data_batch_2.bin", bytes);
  const auto r = run_train(dir, "--model cifar_small --data '" + data + "'");
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(has(r.err, data + "/data_batch_2.bin: record 1: bad label byte 200"));
}

namespace {
// TSUM_TEST_DEVICE (doctest_torch.h), as tsum-train's --device; "cpu" when unset.
std::string test_device_flag() {
  const char* env = std::getenv("TSUM_TEST_DEVICE");
  return env && *env ? env : "cpu";
}
}  // namespace

TEST_CASE("tsum-train: on the test device, each of its precisions learns Fashion-MNIST and saves a CPU checkpoint") {
  const std::string device = test_device_flag();
  const bool cuda = device != "cpu";
  for (const std::string& precision : cuda ? std::vector<std::string>{"fp32", "bf16", "fp16"}
                                          : std::vector<std::string>{"fp32"}) {
    CAPTURE(precision);
    TempDir dir;
    const std::string ckpt = dir.file("model.pt");
    const auto r = run_train(dir, "--device " + device + " --precision " + precision +
                                      " --limit 4096 --epochs 2 --test-limit 1000 --checkpoint '" + ckpt +
                                      "' --data " + TSUM_FASHION_MNIST_DIR);
    INFO("stderr: " << r.err);
    REQUIRE(r.exit_code == 0);
    const auto events = events_of(r.out);
    REQUIRE(names_of(events) ==
            std::vector<std::string>{"ready", "epoch", "epoch", "learn_end", "verify", "saved"});
    CHECK(events[0]["device"] == (cuda ? (device == "cuda" ? "cuda:0" : device) : "cpu"));
    CHECK(events[0]["precision"] == precision);
    CHECK(events[2]["loss"].get<double>() < events[1]["loss"].get<double>());
    CHECK(events[4]["test_accuracy"].get<double>() > 0.6);  // 2 epochs of 4096 images; chance is 0.1
    CHECK(std::filesystem::file_size(ckpt) > 4 * 1199882);
  }
}

TEST_CASE("tsum-train probe-gpu: measures the test device's GPU, or says there is none") {
  TempDir dir;
  CHECK(run_train(dir, "probe-gpu --budget-s 0").exit_code == 2);
  CHECK(run_train(dir, "probe-gpu --device cpu").exit_code == 2);
  CHECK(run_train(dir, "probe-gpu --bogus 1").exit_code == 2);
  const std::string device = test_device_flag();
  if (device == "cpu") {  // a CPU-only build or machine: unavailable, exit 1, nothing on stdout
    const auto r = run_train(dir, "probe-gpu");
    CHECK(r.exit_code == 1);
    CHECK(r.out.empty());
    CHECK(has(r.err, "unavailable"));
    return;
  }
  const auto r = run_train(dir, "probe-gpu --device " + device + " --budget-s 0.2");
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const auto events = events_of(r.out);
  REQUIRE(events.size() == 1);
  const auto& e = events[0];
  CHECK(e["event"] == "gpu_probe");
  CHECK_FALSE(e["name"].get<std::string>().empty());
  CHECK(e["memory_bytes"].get<std::int64_t>() > (std::int64_t{1} << 30));
  CHECK(e["multiprocessors"].get<std::int64_t>() > 0);
  // Lower bounds any CUDA GPU of the last ten years clears (a K80 half: about 2 fp32 TFLOP/s, 150 GB/s).
  CHECK(e["matmul_fp32_tflops"].get<double>() > 0.5);
  CHECK(e["matmul_bf16_tflops"].get<double>() > 0.5);
  CHECK(e["copy_gbps"].get<double>() > 50.0);
  CHECK(e["seconds"].get<double>() < 30.0);
}
