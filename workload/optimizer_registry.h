// Optimizers by name. To add one: add a row to the table in optimizer_registry.cpp.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tsum::workload {

inline constexpr std::string_view kDefaultOptimizer = "adam";

// An optimizer over `params` with learning rate `lr` and the framework's defaults otherwise
// (adam: betas 0.9/0.999, eps 1e-8, computed by FusedAdam; sgd: plain, no momentum). invalid_argument for an unknown
// name or a non-positive lr.
Result<std::unique_ptr<torch::optim::Optimizer>> make_optimizer(
    std::string_view name, const std::vector<torch::Tensor>& params, double lr);

// Known optimizer names, comma separated, for usage text.
std::string optimizer_names();

}  // namespace tsum::workload
