// Where and in which precision tsum-train computes: `--device cpu|cuda[:N]` and
// `--precision fp32|bf16|fp16`.
//
// bf16 is autocast on the CPU (oneDNN uses AMX or AVX512-BF16 where the CPU has them and emulates
// bf16 otherwise) or on CUDA; fp16 is CUDA automatic mixed precision with dynamic loss scaling
// (loss_scaler.h). Parameters and optimizer state stay float32 in every mode; the loss is computed
// in float32 from the autocast logits. A CPU-only libtorch (the default build) answers
// `--device cuda` with `unavailable`, never a crash.
#pragma once

#include <torch/torch.h>

#include <string>
#include <string_view>

#include "common/result.h"

namespace tsum::workload {

enum class Precision { fp32, bf16, fp16 };

struct Placement {
  torch::Device device = torch::kCPU;
  Precision precision = Precision::fp32;
};

// "cpu", "cuda" (device 0) or "cuda:N". invalid_argument otherwise.
Result<torch::Device> parse_device(const std::string& text);
// "fp32", "bf16" or "fp16". invalid_argument otherwise.
Result<Precision> parse_precision(const std::string& text);
std::string_view precision_name(Precision precision);
std::string device_name(const torch::Device& device);

// ok when this libtorch and machine can run `placement`: unavailable for a CUDA device this build
// or machine lacks; invalid_argument for fp16 on the CPU (fp16 autocast is CUDA AMP).
Status check_placement(const Placement& placement);

// What executes bf16 matrix math on this CPU: "amx", "avx512_bf16" or "emulated" (from the
// flags in /proc/cpuinfo).
std::string cpu_bf16_support();

// Enables autocast to the placement's low precision for the scope's lifetime (no-op for fp32).
// Not copyable; nest freely.
class AutocastScope {
 public:
  explicit AutocastScope(const Placement& placement);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false;
  bool cuda_ = false;
  bool was_enabled_ = false;
  at::ScalarType previous_dtype_ = at::kFloat;
};

}  // namespace tsum::workload
