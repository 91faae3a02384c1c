#include "workload/model_registry.h"

#include <array>

#include "workload/mnist_cnn.h"

namespace tsum::workload {
namespace {

struct ModelEntry {
  std::string_view name;
  std::shared_ptr<Model> (*make)();
};

const std::array<ModelEntry, 1> kModels = {{
    {MnistCnn::kName, [] { return std::shared_ptr<Model>(std::make_shared<MnistCnn>()); }},
}};

}  // namespace

Result<std::shared_ptr<Model>> make_model(std::string_view name) {
  for (const auto& entry : kModels) {
    if (entry.name != name) continue;
    try {
      return entry.make();
    } catch (const std::exception& e) {
      return make_error(Code::internal, "model " + std::string(name) + ": " + e.what());
    }
  }
  return make_error(Code::invalid_argument,
                    "unknown model '" + std::string(name) + "' (known: " + model_names() + ")");
}

std::string model_names() {
  std::string out;
  for (const auto& entry : kModels) {
    if (!out.empty()) out += ", ";
    out += entry.name;
  }
  return out;
}

}  // namespace tsum::workload
