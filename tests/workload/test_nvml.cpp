// NVML through dlopen: against a stand-in libnvidia-ml (fake_nvml.c) with two GPUs, and against a
// missing library (this machine has no NVIDIA driver: "no GPU", not a failure). Also tsum-gpustat.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "workload/machine/nvml.h"

namespace tw = tsum::workload;

namespace {

struct Output {
  int status = -1;
  std::string text;
};

Output run(const std::string& command) {
  Output out;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) out.text.append(buf, n);
  const int status = pclose(pipe);
  out.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

}  // namespace

TEST_CASE("nvml: samples every GPU of the loaded library") {
  auto nvml = tw::Nvml::open(FAKE_NVML_LIB);
  REQUIRE_MESSAGE(nvml.ok(), (nvml.ok() ? "" : nvml.error().detail));
  auto samples = (*nvml)->sample();
  REQUIRE(samples.ok());
  REQUIRE(samples->size() == 2);
  CHECK((*samples)[0].name == "Fake H100 A");
  CHECK((*samples)[0].util_pct == 30);
  CHECK((*samples)[1].util_pct == 70);
  CHECK((*samples)[1].mem_used_bytes == (3ULL << 30));
  CHECK((*samples)[1].mem_total_bytes == (80ULL << 30));
}

TEST_CASE("nvml: a missing library or a failing init means no GPU, with the reason") {
  auto missing = tw::Nvml::open("/nonexistent/libnvidia-ml.so.1");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.code() == tsum::Code::unavailable);
  CHECK(missing.error().detail.find("no GPU") == 0);
  CHECK(missing.error().detail.find("/nonexistent/libnvidia-ml.so.1") != std::string::npos);

  setenv("FAKE_NVML_FAIL", "init", 1);
  auto init = tw::Nvml::open(FAKE_NVML_LIB);
  unsetenv("FAKE_NVML_FAIL");
  REQUIRE_FALSE(init.ok());
  CHECK(init.error().detail.find("Driver Not Loaded") != std::string::npos);

  auto lost = tw::Nvml::open(FAKE_NVML_LIB);
  REQUIRE(lost.ok());
  setenv("FAKE_NVML_FAIL", "util", 1);
  auto sample = (*lost)->sample();
  unsetenv("FAKE_NVML_FAIL");
  REQUIRE_FALSE(sample.ok());
  CHECK(sample.error().detail.find("GPU is lost") != std::string::npos);
}

TEST_CASE("tsum-gpustat: JSON and --line output, exit 3 without a GPU") {
  const std::string bin = TSUM_GPUSTAT_BIN;
  const std::string fake = std::string("TSUM_NVML_LIBRARY=") + FAKE_NVML_LIB + " ";
  auto json = run(fake + bin);
  REQUIRE(json.status == 0);
  const auto doc = nlohmann::json::parse(json.text);
  REQUIRE(doc["gpus"].size() == 2);
  CHECK(doc["gpus"][1]["name"] == "Fake H100 B");
  auto line = run(fake + bin + " --line");
  CHECK(line.status == 0);
  CHECK(line.text == std::to_string(50) + " " + std::to_string(4ULL << 30) + "\n");

  auto none = run("TSUM_NVML_LIBRARY=/nonexistent.so " + bin);
  CHECK(none.status == 3);
  const auto empty = nlohmann::json::parse(none.text);
  CHECK(empty["gpus"].empty());
  CHECK(empty["reason"].get<std::string>().find("no GPU") == 0);
  CHECK(run("TSUM_NVML_LIBRARY=/nonexistent.so " + bin + " --line").text.empty());
  CHECK(run(bin + " --bogus 2>/dev/null").status == 2);
}

TEST_CASE("tsum-gpustat: CUDA_VISIBLE_DEVICES (the local provider's) picks the instance's own GPUs") {
  const std::string bin = TSUM_GPUSTAT_BIN;
  const std::string fake = std::string("TSUM_NVML_LIBRARY=") + FAKE_NVML_LIB + " ";
  const auto one = nlohmann::json::parse(run(fake + "CUDA_VISIBLE_DEVICES=1 " + bin).text);
  REQUIRE(one["gpus"].size() == 1);
  CHECK(one["gpus"][0]["index"] == 1);
  CHECK(run(fake + "CUDA_VISIBLE_DEVICES=1 " + bin + " --line").text == "70 " + std::to_string(3ULL << 30) + "\n");
  CHECK(run(fake + "CUDA_VISIBLE_DEVICES=0,1 " + bin + " --line").text ==
        "50 " + std::to_string(4ULL << 30) + "\n");
  const auto hidden = run(fake + "CUDA_VISIBLE_DEVICES= " + bin);
  CHECK(hidden.status == 3);
  CHECK(nlohmann::json::parse(hidden.text)["reason"].get<std::string>().find("CUDA_VISIBLE_DEVICES") !=
        std::string::npos);
  CHECK(run(fake + "CUDA_VISIBLE_DEVICES= " + bin + " --line").status == 3);
  // Not a list of indices (GPU UUIDs): every GPU, as before.
  CHECK(nlohmann::json::parse(run(fake + "CUDA_VISIBLE_DEVICES=GPU-5e1f " + bin).text)["gpus"].size() == 2);
}
