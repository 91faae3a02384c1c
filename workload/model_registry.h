// Models by name. To add one: write a Model subclass in its own file and add a row to the table in
// model_registry.cpp.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"
#include "workload/model.h"

namespace tsum::workload {

inline constexpr std::string_view kDefaultModel = "mnist_cnn";

// A freshly initialized model, or invalid_argument naming the known models.
Result<std::shared_ptr<Model>> make_model(std::string_view name);

// Known model names, comma separated, for usage text.
std::string model_names();

}  // namespace tsum::workload
