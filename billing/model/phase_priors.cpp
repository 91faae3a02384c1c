#include "billing/model/phase_priors.h"

#include <array>

namespace tsum::billing {

namespace {

// provider       startup install(cold, cached) load_data start save poweroff cv
constexpr std::array<PhasePrior, 14> kPriors = {{
    {"default", 60, 120, 20, 30, 5, 10, 40, 0.6},
    {"local", 1, 0, 0, 2, 1, 0.5, 0.5, 0.5},
    {"ssh", 0, 60, 5, 10, 2, 2, 0, 0.5},
    {"aws", 35, 90, 15, 20, 5, 5, 40, 0.5},
    {"gce", 30, 80, 15, 20, 5, 5, 30, 0.5},
    {"azure", 60, 100, 20, 25, 5, 5, 60, 0.5},
    {"oci", 60, 100, 20, 25, 5, 5, 60, 0.6},
    {"hetzner", 20, 80, 15, 15, 5, 5, 10, 0.5},
    {"yandex", 40, 90, 20, 20, 5, 5, 30, 0.5},
    {"selectel", 60, 100, 20, 20, 5, 5, 30, 0.6},
    {"regru", 90, 120, 20, 25, 5, 5, 30, 0.6},
    {"lambda", 180, 30, 10, 20, 5, 5, 60, 0.6},
    {"runpod", 45, 150, 10, 20, 5, 5, 10, 0.6},
    {"vast", 60, 240, 10, 30, 5, 5, 10, 0.8},
}};

}  // namespace

const PhasePrior& phase_prior(std::string_view provider) {
  for (const auto& p : kPriors)
    if (p.provider == provider) return p;
  return kPriors[0];
}

}  // namespace tsum::billing
