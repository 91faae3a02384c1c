// The model zoo beyond mnist_cnn: output shapes, parameter counts, registry configuration, and the
// ResNet-50 v1.5 structure.
#include "doctest_torch.h"

#include "workload/models/bilstm.h"
#include "workload/models/model_registry.h"
#include "workload/models/resnet50.h"

namespace tw = tsum::workload;

namespace {

// A batch the model reads: uniform images, or token ids below its vocabulary.
torch::Tensor batch_for(const tw::InputShape& shape, std::int64_t n) {
  if (shape.kind == tw::InputKind::tokens) {
    return torch::randint(0, shape.vocab, {n, shape.length}, torch::kInt64);
  }
  return torch::rand({n, shape.channels, shape.height, shape.width});
}

}  // namespace

TEST_CASE(
    "models: every registered model gives logits of the right shape and its parameter count") {
  struct Expect {
    const char* name;
    tw::ModelConfig config;
    std::int64_t params;
    std::int64_t outputs;
  };
  const std::vector<Expect> models = {
      {"mnist_cnn", {}, 1199882, 10},
      {"mnist_mlp", {}, 669706, 10},
      {"cifar10_cnn", {}, 1250858, 10},
      {"cifar_small", {}, 31210, 10},
      {"bilstm", {0, 0, 300}, 128 * 300 + 99457, 1},
      // 2048*10 + 10 classifier parameters instead of 2048*1000 + 1000.
      {"resnet50", {10, 64, 0}, 25557032 - 2049000 + 20490, 10},
  };
  for (const auto& m : models) {
    CAPTURE(m.name);
    torch::manual_seed(1);
    auto model = tw::make_model(m.name, m.config);
    REQUIRE_MESSAGE(model.ok(), (model.ok() ? "" : model.error().detail));
    CHECK((*model)->parameter_count() == m.params);
    const auto shape = (*model)->input_shape();
    (*model)->eval();
    torch::NoGradGuard no_grad;
    const auto out = (*model)->forward(batch_for(shape, 3));
    CHECK((out.sizes() == torch::IntArrayRef({3, m.outputs})));
    CHECK(torch::isfinite(out).all().item<bool>());
    const bool binary = (*model)->loss_kind() == tw::LossKind::binary_cross_entropy;
    CHECK(binary == (m.outputs == 1));
  }
}

TEST_CASE("models: defaults of the registry rows") {
  auto cnn = tw::find_model("cifar10_cnn");
  REQUIRE(cnn.ok());
  CHECK((*cnn)->defaults.dataset == tw::DataKind::cifar10);
  CHECK((*cnn)->defaults.batch == 32);
  CHECK((*cnn)->defaults.optimizer == "rmsprop");
  CHECK((*cnn)->defaults.lr == doctest::Approx(1e-4));
  CHECK((*cnn)->defaults.decay == doctest::Approx(1e-6));
  CHECK((*tw::find_model("mnist_mlp"))->defaults.optimizer == "rmsprop");
  CHECK((*tw::find_model("mnist_cnn"))->defaults.optimizer == "adam");
  CHECK((*tw::find_model("bilstm"))->defaults.dataset == tw::DataKind::tokens);
  CHECK((*tw::find_model("resnet50"))->defaults.dataset == tw::DataKind::synthetic);

  auto bilstm = tw::make_model("bilstm");
  REQUIRE(bilstm.ok());
  CHECK((*bilstm)->input_shape().vocab == tw::BiLstm::kDefaultVocab);
  CHECK((*bilstm)->input_shape().length == 100);
}

TEST_CASE("models: classes and image size apply to resnet50 only") {
  auto fixed = tw::make_model("cifar10_cnn", {10, 0, 0});
  REQUIRE_FALSE(fixed.ok());
  CHECK(fixed.code() == tsum::Code::invalid_argument);
  CHECK(fixed.error().detail.find("--classes and --image-size apply to resnet50") !=
        std::string::npos);
  CHECK(tw::make_model("resnet50", {10, 16, 0}).code() == tsum::Code::invalid_argument);
  auto resnet = tw::make_model("resnet50", {7, 96, 0});
  REQUIRE(resnet.ok());
  CHECK((*resnet)->input_shape().classes == 7);
  CHECK((*resnet)->input_shape().height == 96);
}

TEST_CASE("resnet50: the standard 25,557,032 parameters and the v1.5 layout") {
  torch::manual_seed(2);
  const auto resnet = std::make_shared<tw::ResNet50>();
  const tw::ResNet50& model = *resnet;
  CHECK(model.parameter_count() == 25557032);
  const auto shape = model.input_shape();
  CHECK(shape.height == 224);
  CHECK(shape.classes == 1000);

  auto params = model.named_parameters();
  CHECK((params["fc.weight"].sizes() == torch::IntArrayRef({1000, 2048})));
  CHECK((params["conv1.weight"].sizes() == torch::IntArrayRef({64, 3, 7, 7})));
  CHECK((params["layer4.2.conv3.weight"].sizes() == torch::IntArrayRef({2048, 512, 1, 1})));
  CHECK((params["layer1.0.downsample.0.weight"].sizes() == torch::IntArrayRef({256, 64, 1, 1})));
  CHECK(params.contains("layer3.5.bn3.bias"));
  CHECK_FALSE(params.contains("layer3.6.conv1.weight"));  // [3, 4, 6, 3]: layer3 has 6 blocks
  CHECK(params["layer2.0.conv2.weight"].is_contiguous(torch::MemoryFormat::ChannelsLast));

  // v1.5: the first block of a stage downsamples in its 3x3 convolution, not its 1x1.
  auto modules = model.named_modules();
  auto stride_of = [&](const std::string& name) {
    return modules[name]->as<torch::nn::Conv2d>()->options.stride()->at(0);
  };
  CHECK(stride_of("layer2.0.conv1") == 1);
  CHECK(stride_of("layer2.0.conv2") == 2);
  CHECK(stride_of("layer2.0.downsample.0") == 2);
  CHECK(stride_of("layer2.1.conv2") == 1);
  CHECK(stride_of("layer1.0.conv2") == 1);
  // Batch norm starts as the identity affine map; convolutions are Kaiming-normal (fan_out).
  CHECK(params["layer1.0.bn1.weight"].eq(1).all().item<bool>());
  CHECK(params["layer1.0.bn1.bias"].eq(0).all().item<bool>());
  const double fan_out_std = std::sqrt(2.0 / (256 * 3 * 3));
  CHECK(params["layer3.0.conv2.weight"].std().item<double>() ==
        doctest::Approx(fan_out_std).epsilon(0.02));
}

TEST_CASE(
    "models: cifar10_cnn (channels-last) matches a plain NCHW computation of the same weights") {
  torch::manual_seed(3);
  auto model = tw::make_model("cifar10_cnn");
  REQUIRE(model.ok());
  auto params = (*model)->named_parameters();
  CHECK(params["conv2.weight"].is_contiguous(torch::MemoryFormat::ChannelsLast));
  // Same logits as a plain NCHW computation with the same weights.
  (*model)->eval();
  torch::NoGradGuard no_grad;
  const auto x = torch::rand({2, 3, 32, 32});
  auto h = torch::conv2d(x, params["conv1.weight"].contiguous(), params["conv1.bias"], 1, 1).relu();
  h = torch::conv2d(h, params["conv2.weight"].contiguous(), params["conv2.bias"]).relu();
  h = torch::max_pool2d(h, 2);
  h = torch::conv2d(h, params["conv3.weight"].contiguous(), params["conv3.bias"], 1, 1).relu();
  h = torch::conv2d(h, params["conv4.weight"].contiguous(), params["conv4.bias"]).relu();
  h = torch::max_pool2d(h, 2).flatten(1);
  h = torch::linear(h, params["fc1.weight"], params["fc1.bias"]).relu();
  const auto expected = torch::linear(h, params["fc2.weight"], params["fc2.bias"]);
  CHECK(torch::allclose((*model)->forward(x), expected, 1e-4, 1e-5));
}

TEST_CASE("resnet50: folding batch norm for inference computes the same logits, in one pass fewer") {
  torch::manual_seed(4);
  auto model = std::make_shared<tw::ResNet50>(10, 64);
  {
    // Batch norms that are not the identity: trained scales, shifts and running statistics.
    torch::NoGradGuard no_grad;
    for (auto& m : model->modules(false)) {
      if (auto* bn = m->as<torch::nn::BatchNorm2d>()) {
        bn->weight.uniform_(0.5, 1.5);
        bn->bias.uniform_(-0.2, 0.2);
        bn->running_mean.uniform_(-0.1, 0.1);
        bn->running_var.uniform_(0.5, 2.0);
      }
    }
  }
  model->eval();
  torch::NoGradGuard no_grad;
  const auto x = torch::rand({3, 3, 64, 64});
  const auto before = model->forward(x);
  model->fold_for_inference();
  const auto after = model->forward(x);
  CHECK(torch::allclose(before, after, 1e-3, 1e-4));
  CHECK((after.argmax(1) == before.argmax(1)).all().item<bool>());
  CHECK(model->parameter_count() == tw::ResNet50(10, 64).parameter_count());  // the folded copies are no parameters
}
