// `tsumd quickstart`: starts an embedded daemon on a free loopback port, runs Fashion-MNIST through the
// MNIST CNN on local-1c and local-2c via the REST API (real HTTP), and prints the phase table, the cost
// under the four built-in billing rules, the cheapest config per rule and the fastest config.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace tsum::api {

struct QuickstartOptions {
  std::string db_path = "tsum-quickstart.db";
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::string bundle_path;  // the trainer bundle; default: the build's
  int epochs = 1;
  int limit = 10000;
  int test_limit = 2000;
};

// The quickstart table of an experiment as GET /v1/experiments/{id} returns it: per run the 8 phase seconds,
// t_sum, test accuracy and cost under each rule; then the cheapest config per rule and the fastest.
std::string format_table(const nlohmann::json& experiment);

// Returns the process exit code: 0 when every run finished done.
int run_quickstart(const QuickstartOptions& opts);

}  // namespace tsum::api
