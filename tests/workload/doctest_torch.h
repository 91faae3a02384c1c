// Include this instead of <doctest/doctest.h> in tests that use libtorch. libtorch pulls in glog,
// whose CHECK/CHECK_EQ/... macros would silently replace doctest's (aborting on failure and never
// counted), so torch comes first and glog's names are dropped before doctest defines its own.
#pragma once

#include <torch/torch.h>

#undef CHECK
#undef CHECK_EQ
#undef CHECK_NE
#undef CHECK_LT
#undef CHECK_LE
#undef CHECK_GT
#undef CHECK_GE

#include <doctest/doctest.h>

#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "workload/train/device.h"

namespace tsum::test {

// Where the training tests run: TSUM_TEST_DEVICE, "cpu" when unset; a GPU machine runs the suite again with
// TSUM_TEST_DEVICE=cuda (scripts/gpu-check.sh). A device this build or machine cannot use throws, so the test that
// asked for it fails instead of passing on the CPU.
inline torch::Device test_device() {
  const char* env = std::getenv("TSUM_TEST_DEVICE");
  auto device = tsum::workload::parse_device(env && *env ? env : "cpu");
  if (!device.ok()) throw std::runtime_error("TSUM_TEST_DEVICE: " + device.error().detail);
  if (auto st = tsum::workload::check_placement({*device, tsum::workload::Precision::fp32}); !st.ok()) {
    throw std::runtime_error("TSUM_TEST_DEVICE: " + st.error().detail);
  }
  return *device;
}

// The precisions the training tests cover on test_device(): TSUM_TEST_PRECISIONS (comma-separated), else fp32 on
// the CPU (bf16 there has its own cases) and fp32, bf16 and fp16 on a GPU.
inline std::vector<tsum::workload::Precision> test_precisions() {
  const char* env = std::getenv("TSUM_TEST_PRECISIONS");
  std::string list = env && *env ? env : (test_device().is_cpu() ? "fp32" : "fp32,bf16,fp16");
  std::vector<tsum::workload::Precision> out;
  std::stringstream in(list);
  for (std::string name; std::getline(in, name, ',');) {
    auto p = tsum::workload::parse_precision(name);
    if (!p.ok()) throw std::runtime_error("TSUM_TEST_PRECISIONS: " + p.error().detail);
    out.push_back(*p);
  }
  return out;
}

}  // namespace tsum::test

