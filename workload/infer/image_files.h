// Directories of JPEG images for `tsum-train infer`: writing them (gen-images) and decoding one
// into a slot of a float batch laid out channels-last, normalized with the ImageNet mean and
// standard deviation, as an input pipeline for ResNet-50 does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "workload/models/model.h"

namespace tsum::workload {

// Writes `n` seeded `size` x `size` RGB JPEGs (quality 90) named img-000000.jpg... into `dir`
// (created if missing). Their content is data_gen.h's class pattern, so they compress like
// photographs rather than like flat colour. unavailable when the directory cannot be written.
Status write_image_files(const std::string& dir, std::int64_t n, std::int64_t size,
                         std::uint64_t seed);

// The *.jpg / *.jpeg files of `dir`, sorted. not_found when `dir` is missing; invalid_argument
// when it holds no JPEG.
Result<std::vector<std::string>> list_images(const std::string& dir);

// Decodes `path` into `dst`: shape.height x shape.width x shape.channels floats (channels-last;
// one channel means the mean of R, G and B). invalid_argument, naming the file, for a corrupt
// JPEG or one whose size is not the model's input size.
Status decode_into(const std::string& path, const InputShape& shape, float* dst);

}  // namespace tsum::workload
