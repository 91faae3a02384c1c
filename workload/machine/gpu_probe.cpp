#include "workload/machine/gpu_probe.h"

#include <torch/cuda.h>
#include <torch/torch.h>

#ifdef TSUM_HAVE_CUDA  // a CUDA libtorch (workload/CMakeLists.txt): its CUDA headers are there
#include <ATen/cuda/CUDAContext.h>
#endif

#include <chrono>
#include <cmath>
#include <cstdlib>

#include "workload/train/device.h"

namespace tsum::workload {
namespace {

using Clock = std::chrono::steady_clock;

// Seconds per call of `op`, on the device: a warm-up, then repetitions until `budget_s` or 50 of them.
template <typename Op>
double seconds_per_call(int device_index, double budget_s, Op op) {
  op();
  torch::cuda::synchronize(device_index);
  int calls = 0;
  const auto start = Clock::now();
  double elapsed = 0.0;
  do {
    for (int i = 0; i < 5; ++i) op();
    calls += 5;
    torch::cuda::synchronize(device_index);
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  } while (elapsed < budget_s && calls < 50);
  return elapsed / calls;
}

}  // namespace

bool is_probe_command(const std::vector<std::string>& args) {
  return !args.empty() && args[0] == "probe-gpu";
}

Result<GpuProbeOptions> parse_probe_options(const std::vector<std::string>& args) {
  GpuProbeOptions o;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (i + 1 >= args.size()) return make_error(Code::invalid_argument, "probe-gpu: " + flag + " needs a value");
    const std::string& value = args[++i];
    if (flag == "--device") {
      o.device = value;
    } else if (flag == "--budget-s") {
      char* end = nullptr;
      o.budget_s = std::strtod(value.c_str(), &end);
      if (end == value.c_str() || *end != '\0' || !(o.budget_s > 0.0) || o.budget_s > 60.0) {
        return make_error(Code::invalid_argument, "probe-gpu: --budget-s wants seconds in (0, 60], got " + value);
      }
    } else {
      return make_error(Code::invalid_argument, "probe-gpu: unknown flag " + flag);
    }
  }
  return o;
}

Status run_gpu_probe(const GpuProbeOptions& options, EventWriter& events) {
  auto device = parse_device(options.device);
  if (!device.ok()) return device.error();
  if (!device->is_cuda()) return make_error(Code::invalid_argument, "probe-gpu: --device must be cuda or cuda:N");
  if (auto st = check_placement({*device, Precision::fp32}); !st.ok()) return st;
#ifndef TSUM_HAVE_CUDA
  return make_error(Code::unavailable, "probe-gpu: this tsum-train was built without CUDA");
#else
  try {
    const auto start = Clock::now();
    const int index = device->index();
    const cudaDeviceProp* prop = at::cuda::getDeviceProperties(index);
    constexpr std::int64_t kN = 4096;
    const auto on = torch::TensorOptions().device(*device);
    const double flops = 2.0 * kN * kN * kN;
    double tflops[2] = {0, 0};
    int k = 0;
    for (const auto dtype : {torch::kBFloat16, torch::kFloat32}) {
      try {
        const torch::Tensor a = torch::randn({kN, kN}, on.dtype(dtype));
        const torch::Tensor b = torch::randn({kN, kN}, on.dtype(dtype));
        torch::Tensor c = torch::empty({kN, kN}, on.dtype(dtype));
        tflops[k] = flops / seconds_per_call(index, options.budget_s, [&] { torch::mm_out(c, a, b); }) / 1e12;
      } catch (const c10::Error&) {
        tflops[k] = std::nan("");  // bf16 on a GPU older than Ampere: null in the event
      }
      ++k;
    }
    constexpr std::int64_t kBytes = std::int64_t{256} << 20;
    const torch::Tensor src = torch::ones({kBytes}, on.dtype(torch::kUInt8));
    torch::Tensor dst = torch::empty({kBytes}, on.dtype(torch::kUInt8));
    const double copy_s = seconds_per_call(index, options.budget_s, [&] { dst.copy_(src); });
    events.emit("gpu_probe", {{"device", device_name(*device)},
                              {"name", std::string(prop->name)},
                              {"memory_bytes", static_cast<std::int64_t>(prop->totalGlobalMem)},
                              {"multiprocessors", std::int64_t{prop->multiProcessorCount}},
                              {"matmul_bf16_tflops", tflops[0]},
                              {"matmul_fp32_tflops", tflops[1]},
                              {"copy_gbps", 2.0 * static_cast<double>(kBytes) / copy_s / 1e9},
                              {"seconds", std::chrono::duration<double>(Clock::now() - start).count()}});
  } catch (const std::exception& e) {
    return make_error(Code::internal, std::string("probe-gpu: ") + e.what());
  }
  return {};
#endif
}

}  // namespace tsum::workload
