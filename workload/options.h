// Command-line options of tsum-train.
//
//   tsum-train [--model mnist_cnn] [--data DIR] [--epochs 1] [--limit N] [--test-limit N]
//              [--batch 128] [--lr 0.001] [--optimizer adam] [--threads N]
//              [--checkpoint PATH] [--seed 1] [--help]
//
// Both "--flag value" and "--flag=value" are accepted. Model and optimizer names are checked later
// by their registries; this parser checks syntax and ranges only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace tsum::workload {

struct Options {
  std::string model = "mnist_cnn";
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::int64_t epochs = 1;
  std::int64_t limit = 0;       // 0: all training images
  std::int64_t test_limit = 0;  // 0: all test images
  std::int64_t batch = 128;
  double lr = 1e-3;
  std::string optimizer = "adam";
  int threads = 0;              // 0: CPUs in this process's affinity mask
  std::string checkpoint = "model.pt";
  std::uint64_t seed = 1;
  bool help = false;
};

// Parses argv[1..]. invalid_argument for an unknown flag, a missing value, or a bad value; the
// detail names the flag.
Result<Options> parse_options(const std::vector<std::string>& args);

// Usage text, one flag per line.
std::string usage();

// Number of CPUs in this process's affinity mask (sched_getaffinity), at least 1.
int affinity_cpu_count();

}  // namespace tsum::workload
