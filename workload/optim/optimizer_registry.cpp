#include "workload/optim/optimizer_registry.h"

#include <array>

#include "workload/optim/adadelta.h"
#include "workload/optim/fused_adam.h"
#include "workload/optim/nadam.h"

namespace tsum::workload {
namespace {

using OptimizerPtr = std::unique_ptr<torch::optim::Optimizer>;
using Params = std::vector<torch::Tensor>;

constexpr double kMomentum = 0.9;
constexpr double kKerasEpsilon = 1e-7;

struct OptimizerEntry {
  std::string_view name;
  double default_lr;
  OptimizerPtr (*make)(const Params& params, double lr);
};

const std::array<OptimizerEntry, 8> kOptimizers = {{
    {"sgd", 0.01,
     [](const Params& params, double lr) -> OptimizerPtr {
       return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(lr));
     }},
    {"momentum", 0.01,
     [](const Params& params, double lr) -> OptimizerPtr {
       return std::make_unique<torch::optim::SGD>(params,
                                                  torch::optim::SGDOptions(lr).momentum(kMomentum));
     }},
    {"nesterov", 0.01,
     [](const Params& params, double lr) -> OptimizerPtr {
       return std::make_unique<torch::optim::SGD>(
           params, torch::optim::SGDOptions(lr).momentum(kMomentum).nesterov(true));
     }},
    {"rmsprop", 0.001,
     [](const Params& params, double lr) -> OptimizerPtr {
       return std::make_unique<torch::optim::RMSprop>(
           params, torch::optim::RMSpropOptions(lr).alpha(0.9).eps(kKerasEpsilon));
     }},
    {"adam", 0.001,
     [](const Params& params, double lr) -> OptimizerPtr {
       return std::make_unique<FusedAdam>(params, torch::optim::AdamOptions(lr));
     }},
    {"adagrad", 0.01,
     [](const Params& params, double lr) -> OptimizerPtr {
       return std::make_unique<torch::optim::Adagrad>(
           params, torch::optim::AdagradOptions(lr).eps(kKerasEpsilon));
     }},
    {"adadelta", 1.0,
     [](const Params& params, double lr) -> OptimizerPtr {
       return std::make_unique<Adadelta>(params, AdadeltaOptions(lr));
     }},
    {"nadam", 0.002,
     [](const Params& params, double lr) -> OptimizerPtr {
       return std::make_unique<Nadam>(params, NadamOptions(lr));
     }},
}};

const OptimizerEntry* find(std::string_view name) {
  for (const auto& entry : kOptimizers) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

Error unknown(std::string_view name) {
  return make_error(Code::invalid_argument, "unknown optimizer '" + std::string(name) +
                                                "' (known: " + optimizer_names() + ")");
}

}  // namespace

Result<std::unique_ptr<torch::optim::Optimizer>> make_optimizer(
    std::string_view name, const std::vector<torch::Tensor>& params, double lr) {
  const OptimizerEntry* entry = find(name);
  if (entry == nullptr) return unknown(name);
  if (!(lr > 0.0)) {
    return make_error(Code::invalid_argument, "learning rate must be > 0, got " + std::to_string(lr));
  }
  try {
    return entry->make(params, lr);
  } catch (const std::exception& e) {
    return make_error(Code::internal, "optimizer " + std::string(name) + ": " + e.what());
  }
}

Result<double> default_learning_rate(std::string_view name) {
  const OptimizerEntry* entry = find(name);
  if (entry == nullptr) return unknown(name);
  return entry->default_lr;
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
