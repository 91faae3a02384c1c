// tsum-train probe-gpu [--device cuda[:N]] [--budget-s S]: a few seconds that say whether a GPU gives what its name
// promises. Measures dense matrix products (bf16 and fp32, square, 4096) and a device-to-device copy (256 MiB), each
// timed after a warm-up with the device synchronized, and prints one event:
//   {"event":"gpu_probe","mono_s":..,"device":"cuda:0","name":"NVIDIA H200","memory_bytes":..,
//    "multiprocessors":..,"matmul_bf16_tflops":..,"matmul_fp32_tflops":..,"copy_gbps":..,"seconds":..}
// copy_gbps counts the bytes read and written. The agent runs it during install on any machine with a GPU and puts
// the event in the install mark, so a throttled or partitioned GPU (half of a K80, a shared MIG slice) shows on the
// run page and in the export. unavailable where this libtorch or machine has no CUDA device.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "workload/train/event_writer.h"

namespace tsum::workload {

struct GpuProbeOptions {
  std::string device = "cuda";
  double budget_s = 1.0;  // timed seconds per measurement, at most (each stops earlier after 50 repetitions)
};

bool is_probe_command(const std::vector<std::string>& args);
Result<GpuProbeOptions> parse_probe_options(const std::vector<std::string>& args);  // args[0] == "probe-gpu"
Status run_gpu_probe(const GpuProbeOptions& options, EventWriter& events);

}  // namespace tsum::workload
