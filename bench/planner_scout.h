// The Scout replay of bench_planner: tsum's probe search on real measured cloud runtimes nobody here generated
// (../shared/testdata/scout/runs.csv: 11 Hadoop/Spark workloads x 69 AWS c4/m4/r4 configs of 4-48 nodes).
#pragma once

#include <string>

#include "billing/model/predictor.h"

namespace tsum::bench {

struct ScoutOptions {
  std::string csv;      // path of runs.csv
  int seeds = 20;       // random first probes per workload x rule
  int max_probes = 8;
  bool explain = false; // print the probes and stop reasons of the first seeds that miss by more than 5% after 6 probes
  std::string only;     // run only the workloads whose name contains this
  billing::LearnModel model = billing::LearnModel::automatic;
};

// Prints the tables and the targets; returns 0, or 1 when the file cannot be read.
int run_scout(const ScoutOptions& o);

}  // namespace tsum::bench
