// tsum-gpustat: one NVML sample of every GPU (nvml.h), small and quick enough for the agent's
// once-a-second sampler.
//
//   tsum-gpustat           {"gpus":[{"index":0,"name":...,"util_pct":..,"mem_used_bytes":..,
//                           "mem_total_bytes":..}]}  or  {"gpus":[],"reason":"no GPU: ..."}
//   tsum-gpustat --line    "UTIL_PCT MEM_USED_BYTES": mean utilization and total memory in use
//                          over all GPUs; nothing when there is none
// Where CUDA_VISIBLE_DEVICES is a list of indices (nvml.h), only those GPUs count: an instance's statistics are its
// own GPUs', and an empty list is none.
// Exit status: 0 with a sample, 3 when there is no GPU (NVML absent or failing), 2 bad usage.
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "workload/machine/nvml.h"

int main(int argc, char** argv) {
  using tsum::workload::Nvml;
  const bool line = argc == 2 && std::strcmp(argv[1], "--line") == 0;
  if (argc > 2 || (argc == 2 && !line)) {
    std::fprintf(stderr, "usage: tsum-gpustat [--line]\n");
    return 2;
  }
  auto nvml = Nvml::open();
  auto samples = nvml.ok() ? (*nvml)->sample() : nvml.error();
  if (const auto visible = tsum::workload::cuda_visible_indices(); samples.ok() && visible) {
    std::erase_if(*samples, [&](const auto& s) { return !visible->count(s.index); });
    if (samples->empty()) samples = tsum::make_error(tsum::Code::unavailable, "no GPU: CUDA_VISIBLE_DEVICES hides them all");
  }
  if (!samples.ok()) {
    if (!line) std::printf("%s\n", nlohmann::json{{"gpus", nlohmann::json::array()},
                                                  {"reason", samples.error().detail}}.dump().c_str());
    return 3;
  }
  if (line) {
    if (samples->empty()) return 3;
    double util = 0;
    unsigned long long used = 0;
    for (const auto& s : *samples) {
      util += s.util_pct;
      used += s.mem_used_bytes;
    }
    std::printf("%.0f %llu\n", util / static_cast<double>(samples->size()), used);
    return 0;
  }
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& s : *samples) {
    gpus.push_back({{"index", s.index},
                    {"name", s.name},
                    {"util_pct", s.util_pct},
                    {"mem_used_bytes", s.mem_used_bytes},
                    {"mem_total_bytes", s.mem_total_bytes}});
  }
  std::printf("%s\n", nlohmann::json{{"gpus", gpus}}.dump().c_str());
  return 0;
}
