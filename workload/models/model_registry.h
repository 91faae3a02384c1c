// Models by name, each with the training recipe it runs with by default. To add one: write a Model
// subclass in its own file and add a row to the table in model_registry.cpp.
//
//   model        data set   batch  optimizer  lr      decay
//   mnist_cnn    idx        128    adam       0.001   0
//   mnist_mlp    idx        128    rmsprop    0.001   0
//   cifar10_cnn  cifar10    32     rmsprop    0.0001  1e-6
//   cifar_small  cifar10    32     adam       0.001   0
//   bilstm       tokens     32     adam       0.001   0
//   resnet50     synthetic  32     momentum   0.0125  0     (0.1 x 32/256, the linear-scaling rule)
// The Keras examples' own recipes, except mnist_cnn (Keras: Adadelta; here Adam, as tsum's
// benchmark against PyTorch has always run it) and the two without a Keras original.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"
#include "workload/data/dataset.h"
#include "workload/models/model.h"

namespace tsum::workload {

inline constexpr std::string_view kDefaultModel = "mnist_cnn";

// Construction settings; 0 means the model's default.
struct ModelConfig {
  std::int64_t classes = 0;     // resnet50 only: output classes (default 1000)
  std::int64_t image_size = 0;  // resnet50 only: input side in pixels (default 224, at least 32)
  std::int64_t vocab = 0;       // token models: embedding rows (bilstm default 20000)
};

struct TrainingDefaults {
  DataKind dataset;
  std::int64_t batch;
  std::string_view optimizer;
  double lr;
  double decay;
};

struct ModelInfo {
  std::string_view name;
  TrainingDefaults defaults;
  bool resizable;  // honors ModelConfig::classes and image_size
  std::shared_ptr<Model> (*make)(const ModelConfig& config);
};

// The registry row for `name`, or invalid_argument naming the known models.
Result<const ModelInfo*> find_model(std::string_view name);

// invalid_argument when `config` sets classes or image_size for a model that is not resizable, or
// an image_size below 32.
Status check_model_config(const ModelInfo& info, const ModelConfig& config);

// A freshly initialized model. invalid_argument for an unknown name, classes or image_size given
// to a model that is not resizable, or an image_size below 32.
Result<std::shared_ptr<Model>> make_model(std::string_view name, const ModelConfig& config = {});

// Known model names, comma separated, for usage text.
std::string model_names();

}  // namespace tsum::workload
