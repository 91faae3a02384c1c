// The seeds' experiments as presets, filled for the providers configured (GET /v1/presets, POST
// /v1/presets/{name}, `tsumd preset list`, `tsumd experiment create --preset NAME`, the dashboard's form):
//   cpu-vs-gpu  the MNIST and CIFAR-10 CNNs on 1, 2, 4, 8, 12, 16, 24 cores and on 1-2 GPUs, 10 repetitions
//               (per provider: the cheapest offer of each such size)
//   optimizers  seed 002's comparison: the CIFAR-10 CNN with each of the 8 optimizers, on the largest CPU offer
//               of the local provider (else the cheapest offer), 3 repetitions
//   inference   ResNet-50's batch sweep (1..64), sync and async, on that CPU offer and the cheapest 1-GPU offer
// The CIFAR experiments need a registered cifar10-bin data set (the first one, by name); without one they are
// left out and a note says so. Each preset experiment has a deadline per run, so its worst case (every run
// reaching its deadline, billed by each rule) is known before anything starts.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "daemon/artifacts/datasets.h"
#include "providers/provider.h"

namespace tsum::daemon {

struct Preset {
  std::string name;
  std::string description;
  std::vector<nlohmann::json> experiments;  // POST /v1/experiments bodies
  std::vector<std::string> notes;           // what was left out, and why
};

// Every preset for these offers and data sets (offers without vCPUs, e.g. byo's, are left out).
std::vector<Preset> presets(const std::vector<providers::Offer>& offers, const std::vector<Dataset>& datasets);

// {"name", "description", "experiments", "notes", "runs", "worst_case": {rule: amount}, "currency"}: the runs
// the preset implies and their cost if every run reached its deadline, priced from `offers`.
nlohmann::json preset_summary(const Preset& p, const std::vector<providers::Offer>& offers);

}  // namespace tsum::daemon
