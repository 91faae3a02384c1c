// The synthetic data set: seeded generated examples of exactly the shape a model reads (for
// example 3x224x224 images in 1000 classes for resnet50), drawn from data_gen.h's learnable
// patterns. Lets every model train without data files; throughput matches real data of that shape.
#pragma once

#include <cstdint>

#include "common/result.h"
#include "workload/data/dataset.h"
#include "workload/models/model.h"

namespace tsum::workload {

// Examples per split when --limit / --test-limit are not given.
inline constexpr std::int64_t kSyntheticTrainSize = 256;
inline constexpr std::int64_t kSyntheticTestSize = 64;

// `n` examples for a model reading `shape`: images float32 [n, C, H, W] in [0, 1], or token ids
// int64 [n, shape.length] below shape.vocab; labels uniform in [0, shape.classes). The same seed
// gives the same data. invalid_argument for n < 1 or a shape the generator cannot fill (tokens need
// a vocabulary of at least 22 ids).
Result<Dataset> make_synthetic_dataset(const InputShape& shape, std::int64_t n, std::uint64_t seed);

}  // namespace tsum::workload
