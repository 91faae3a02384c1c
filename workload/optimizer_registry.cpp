#include "workload/optimizer_registry.h"

#include <array>

#include "workload/fused_adam.h"

namespace tsum::workload {
namespace {

using OptimizerPtr = std::unique_ptr<torch::optim::Optimizer>;

struct OptimizerEntry {
  std::string_view name;
  OptimizerPtr (*make)(const std::vector<torch::Tensor>& params, double lr);
};

const std::array<OptimizerEntry, 2> kOptimizers = {{
    {"adam",
     [](const std::vector<torch::Tensor>& params, double lr) -> OptimizerPtr {
       return std::make_unique<FusedAdam>(params, torch::optim::AdamOptions(lr));
     }},
    {"sgd",
     [](const std::vector<torch::Tensor>& params, double lr) -> OptimizerPtr {
       return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(lr));
     }},
}};

}  // namespace

Result<std::unique_ptr<torch::optim::Optimizer>> make_optimizer(
    std::string_view name, const std::vector<torch::Tensor>& params, double lr) {
  if (!(lr > 0.0)) {
    return make_error(Code::invalid_argument, "learning rate must be > 0, got " + std::to_string(lr));
  }
  for (const auto& entry : kOptimizers) {
    if (entry.name != name) continue;
    try {
      return entry.make(params, lr);
    } catch (const std::exception& e) {
      return make_error(Code::internal, "optimizer " + std::string(name) + ": " + e.what());
    }
  }
  return make_error(Code::invalid_argument, "unknown optimizer '" + std::string(name) +
                                                "' (known: " + optimizer_names() + ")");
}

std::string optimizer_names() {
  std::string out;
  for (const auto& entry : kOptimizers) {
    if (!out.empty()) out += ", ";
    out += entry.name;
  }
  return out;
}

}  // namespace tsum::workload
