// GPU utilization and memory through NVML, loaded at run time with dlopen so that nothing links
// against the NVIDIA driver: where libnvidia-ml.so.1 is absent (any machine without an NVIDIA
// driver, including every CI machine) the answer is "no GPU", never a failure to start.
// Self-contained (no libtorch), so the small tsum-gpustat tool can sample it every second.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"

namespace tsum::workload {

struct GpuSample {
  int index = 0;
  std::string name;
  unsigned util_pct = 0;  // percent of the last sample period a kernel ran
  std::uint64_t mem_used_bytes = 0;
  std::uint64_t mem_total_bytes = 0;
};

class Nvml {
 public:
  // Loads `library` (default: libnvidia-ml.so.1 from the loader's path, or $TSUM_NVML_LIBRARY when
  // set) and initializes NVML. unavailable, with the reason, when the library is missing, lacks a
  // symbol, or nvmlInit fails (no driver, no device).
  static Result<std::unique_ptr<Nvml>> open(const std::string& library = "");

  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  // One sample per device, in index order. unavailable when NVML answers with an error (a GPU that
  // fell off the bus, say); the detail carries NVML's own message.
  Result<std::vector<GpuSample>> sample() const;

  struct Api;  // the resolved entry points

 private:
  Nvml(void* handle, std::unique_ptr<Api> api);
  void* handle_;
  std::unique_ptr<Api> api_;
};

// CUDA_VISIBLE_DEVICES as NVML indices, for a process told to use some GPUs only (the local provider sets it, with
// CUDA_DEVICE_ORDER=PCI_BUS_ID, which is NVML's order); an empty list is none. nullopt when it is unset or not a list
// of indices (GPU UUIDs, say): then every GPU counts.
std::optional<std::set<int>> cuda_visible_indices();

}  // namespace tsum::workload
