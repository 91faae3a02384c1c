#include "workload/models/model_registry.h"

#include <array>

#include "workload/models/bilstm.h"
#include "workload/models/cifar10_cnn.h"
#include "workload/models/cifar_small.h"
#include "workload/models/mnist_cnn.h"
#include "workload/models/mnist_mlp.h"
#include "workload/models/resnet50.h"

namespace tsum::workload {
namespace {

template <class M>
std::shared_ptr<Model> make_fixed(const ModelConfig&) {
  return std::make_shared<M>();
}

const std::array<ModelInfo, 6> kModels = {{
    {MnistCnn::kName, {DataKind::idx, 128, "adam", 1e-3, 0.0}, false, make_fixed<MnistCnn>},
    {MnistMlp::kName, {DataKind::idx, 128, "rmsprop", 1e-3, 0.0}, false, make_fixed<MnistMlp>},
    {Cifar10Cnn::kName, {DataKind::cifar10, 32, "rmsprop", 1e-4, 1e-6}, false,
     make_fixed<Cifar10Cnn>},
    {CifarSmall::kName, {DataKind::cifar10, 32, "adam", 1e-3, 0.0}, false, make_fixed<CifarSmall>},
    {BiLstm::kName, {DataKind::tokens, 32, "adam", 1e-3, 0.0}, false,
     [](const ModelConfig& c) -> std::shared_ptr<Model> {
       return std::make_shared<BiLstm>(c.vocab > 0 ? c.vocab : BiLstm::kDefaultVocab);
     }},
    {ResNet50::kName, {DataKind::synthetic, 32, "momentum", 0.0125, 0.0}, true,
     [](const ModelConfig& c) -> std::shared_ptr<Model> {
       return std::make_shared<ResNet50>(c.classes > 0 ? c.classes : ResNet50::kDefaultClasses,
                                         c.image_size > 0 ? c.image_size
                                                          : ResNet50::kDefaultImageSize);
     }},
}};

}  // namespace

Result<const ModelInfo*> find_model(std::string_view name) {
  for (const auto& entry : kModels) {
    if (entry.name == name) return &entry;
  }
  return make_error(Code::invalid_argument,
                    "unknown model '" + std::string(name) + "' (known: " + model_names() + ")");
}

Status check_model_config(const ModelInfo& info, const ModelConfig& config) {
  if (!info.resizable && (config.classes != 0 || config.image_size != 0)) {
    return make_error(Code::invalid_argument, "model " + std::string(info.name) +
                                                  " has a fixed input size and class count; "
                                                  "--classes and --image-size apply to resnet50");
  }
  if (config.classes < 0 || config.vocab < 0 ||
      (config.image_size != 0 && config.image_size < ResNet50::kMinImageSize)) {
    return make_error(Code::invalid_argument,
                      "model " + std::string(info.name) + ": classes and vocab must be positive, "
                          "image size at least " + std::to_string(ResNet50::kMinImageSize));
  }
  return {};
}

Result<std::shared_ptr<Model>> make_model(std::string_view name, const ModelConfig& config) {
  auto info = find_model(name);
  if (!info.ok()) return info.error();
  if (auto st = check_model_config(**info, config); !st.ok()) return st.error();
  try {
    return (*info)->make(config);
  } catch (const std::exception& e) {
    return make_error(Code::internal, "model " + std::string(name) + ": " + e.what());
  }
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
