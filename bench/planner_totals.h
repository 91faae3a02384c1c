// bench_planner's totals: what a search plus the planned runs on its pick cost, on the measured traces and on
// generated tables of their shape (planner_totals.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "billing/model/predictor.h"

namespace tsum::bench {

struct TotalsOptions {
  std::string scout;          // runs.csv; "" = skip
  std::string ibm;            // multi-cloud-configuration.csv; "" = skip
  std::string trimtuner_dir;  // the folder of cnn.csv and rnn.csv; "" = skip
  int generated = 100;        // generated tables
  uint64_t seed = 1;
  bool explain = false;       // print the costly cases and any that break a check, with their probes
  billing::LearnModel model = billing::LearnModel::automatic;
  bool time_rounds = true;    // also time a search's rounds at 70, 300 and 1,000 candidates
  std::string sets;           // only the sets whose name starts with this ("" = all)
  std::string only;           // only the cases whose name contains this ("" = all)
  uint64_t predictor_seed = 1;  // the predictor's seed (PredictorOptions::seed): its particles and draws
};

int run_totals(const TotalsOptions& o);

}  // namespace tsum::bench
