#include "workload/data/synthetic_data.h"

#include <vector>

#include "workload/data/data_gen.h"
#include "workload/data/token_data.h"

namespace tsum::workload {
namespace {

constexpr const char* kSource = "synthetic data";

torch::Tensor synthetic_images(const InputShape& shape, const std::vector<std::int64_t>& labels,
                               DataRng& rng) {
  const auto n = std::ssize(labels);
  const std::int64_t per_image = shape.channels * shape.height * shape.width;
  torch::Tensor pixels =
      torch::empty({n, shape.channels, shape.height, shape.width}, torch::kUInt8);
  auto* out = pixels.data_ptr<std::uint8_t>();
  for (std::int64_t i = 0; i < n; ++i) {
    draw_class_image(labels[static_cast<std::size_t>(i)], shape.channels, shape.height, shape.width,
                     rng, out + i * per_image);
  }
  return pixels.to(torch::kFloat32).div_(255.0f);
}

torch::Tensor synthetic_tokens(const InputShape& shape, const std::vector<std::int64_t>& labels,
                               DataRng& rng) {
  const auto n = std::ssize(labels);
  torch::Tensor ids = torch::empty({n, shape.length}, torch::kInt64);
  auto* out = ids.data_ptr<std::int64_t>();
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t label = labels[static_cast<std::size_t>(i)];
    fit_sequence(draw_class_tokens(label, shape.length, shape.vocab, rng), out + i * shape.length);
  }
  return ids;
}

}  // namespace

Result<Dataset> make_synthetic_dataset(const InputShape& shape, std::int64_t n,
                                       std::uint64_t seed) {
  if (n < 1) return make_error(Code::invalid_argument, "synthetic data: need at least 1 example");
  if (shape.classes < 1) return make_error(Code::invalid_argument, "synthetic data: no classes");
  const bool tokens = shape.kind == InputKind::tokens;
  if (tokens && (shape.vocab <= 2 * kSignalTokens + 1 || shape.length != kSequenceLength ||
                 shape.classes != 2)) {
    return make_error(Code::invalid_argument,
                      "synthetic data: token models need 2 classes, sequences of " +
                          std::to_string(kSequenceLength) + " and a vocabulary above " +
                          std::to_string(2 * kSignalTokens + 1));
  }
  DataRng rng(seed);
  std::vector<std::int64_t> labels(static_cast<std::size_t>(n));
  for (auto& label : labels) label = rng.below(shape.classes);
  try {
    Dataset out;
    out.inputs =
        tokens ? synthetic_tokens(shape, labels, rng) : synthetic_images(shape, labels, rng);
    out.labels = torch::tensor(labels, torch::kInt64);
    out.vocab = tokens ? shape.vocab : 0;
    out.inputs_path = kSource;
    out.labels_path = kSource;
    return out;
  } catch (const std::exception& e) {
    return make_error(Code::internal, std::string(kSource) + ": " + e.what());
  }
}

}  // namespace tsum::workload
