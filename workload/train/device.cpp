#include "workload/train/device.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <charconv>
#include <fstream>
#include <sstream>

namespace tsum::workload {
namespace {

// libtorch 2.4 replaced the per-device autocast setters with ones taking the device type.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool autocast_enabled(bool cuda) {
  return at::autocast::is_autocast_enabled(cuda ? at::kCUDA : at::kCPU);
}
void set_autocast(bool cuda, bool enabled) {
  at::autocast::set_autocast_enabled(cuda ? at::kCUDA : at::kCPU, enabled);
}
at::ScalarType autocast_dtype(bool cuda) {
  return at::autocast::get_autocast_dtype(cuda ? at::kCUDA : at::kCPU);
}
void set_autocast_dtype(bool cuda, at::ScalarType dtype) {
  at::autocast::set_autocast_dtype(cuda ? at::kCUDA : at::kCPU, dtype);
}
#else
bool autocast_enabled(bool cuda) {
  return cuda ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
}
void set_autocast(bool cuda, bool enabled) {
  if (cuda) {
    at::autocast::set_enabled(enabled);
  } else {
    at::autocast::set_cpu_enabled(enabled);
  }
}
at::ScalarType autocast_dtype(bool cuda) {
  return cuda ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
}
void set_autocast_dtype(bool cuda, at::ScalarType dtype) {
  if (cuda) {
    at::autocast::set_autocast_gpu_dtype(dtype);
  } else {
    at::autocast::set_autocast_cpu_dtype(dtype);
  }
}
#endif

}  // namespace

Result<torch::Device> parse_device(const std::string& text) {
  if (text == "cpu") return torch::Device(torch::kCPU);
  if (text == "cuda") return torch::Device(torch::kCUDA, 0);
  if (text.rfind("cuda:", 0) == 0) {
    const std::string index = text.substr(5);
    int n = -1;
    const auto [ptr, ec] = std::from_chars(index.data(), index.data() + index.size(), n);
    if (!index.empty() && ec == std::errc() && ptr == index.data() + index.size() && n >= 0 &&
        n < 128) {
      return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(n));
    }
  }
  return make_error(Code::invalid_argument,
                    "--device: expected cpu, cuda or cuda:N, got '" + text + "'");
}

Result<Precision> parse_precision(const std::string& text) {
  if (text == "fp32") return Precision::fp32;
  if (text == "bf16") return Precision::bf16;
  if (text == "fp16") return Precision::fp16;
  return make_error(Code::invalid_argument,
                    "--precision: expected fp32, bf16 or fp16, got '" + text + "'");
}

std::string_view precision_name(Precision precision) {
  switch (precision) {
    case Precision::bf16:
      return "bf16";
    case Precision::fp16:
      return "fp16";
    case Precision::fp32:
      break;
  }
  return "fp32";
}

std::string device_name(const torch::Device& device) {
  if (device.is_cpu()) return "cpu";
  return "cuda:" + std::to_string(device.has_index() ? device.index() : 0);
}

Status check_placement(const Placement& placement) {
  if (placement.device.is_cuda()) {
    if (!torch::cuda::is_available()) {
      return make_error(Code::unavailable,
                        "--device " + device_name(placement.device) +
                            ": CUDA is not available (this tsum-train links a CPU-only libtorch, "
                            "or the machine has no usable NVIDIA GPU)");
    }
    const auto count = static_cast<std::int64_t>(torch::cuda::device_count());
    if (placement.device.index() >= count) {
      return make_error(Code::unavailable, "--device " + device_name(placement.device) +
                                               ": this machine has " + std::to_string(count) +
                                               " CUDA device(s)");
    }
    return {};
  }
  if (placement.precision == Precision::fp16) {
    return make_error(Code::invalid_argument,
                      "--precision fp16 is CUDA mixed precision; on the CPU use bf16 or fp32");
  }
  return {};
}

std::string cpu_bf16_support() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line);
    bool amx = false;
    bool avx512_bf16 = false;
    for (std::string flag; words >> flag;) {
      amx = amx || flag == "amx_bf16";
      avx512_bf16 = avx512_bf16 || flag == "avx512_bf16";
    }
    if (amx) return "amx";
    if (avx512_bf16) return "avx512_bf16";
    break;
  }
  return "emulated";
}

AutocastScope::AutocastScope(const Placement& placement) {
  if (placement.precision == Precision::fp32) return;
  active_ = true;
  cuda_ = placement.device.is_cuda();
  was_enabled_ = autocast_enabled(cuda_);
  previous_dtype_ = autocast_dtype(cuda_);
  set_autocast(cuda_, true);
  set_autocast_dtype(cuda_, placement.precision == Precision::bf16 ? at::kBFloat16 : at::kHalf);
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  // The outermost scope drops the cast weights autocast cached for this forward pass.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_autocast(cuda_, was_enabled_);
  set_autocast_dtype(cuda_, previous_dtype_);
}

}  // namespace tsum::workload
