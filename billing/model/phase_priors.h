// Default durations of the phases other than learn, per provider: what the predictor assumes before any run
// on that provider was measured. Replaced by measurements as soon as one exists.
//
// These are tsum's defaults, not measurements: rough orders of magnitude for a Linux VM booting to a running
// agent (startup), installing Docker and the framework or finding them in a cached image (install), copying
// a dataset of ~100 MB (load_data), starting the framework (start), uploading weights (save) and the provider
// confirming termination (poweroff). GPU marketplaces (vast, runpod) pull large images, so their cold install
// is longer; Lambda's instances take minutes to pass health checks. Every prior has a relative spread `cv`.
#pragma once

#include <string_view>

namespace tsum::billing {

struct PhasePrior {
  std::string_view provider;
  double startup = 0;
  double install_cold = 0;
  double install_cached = 0;
  double load_data = 0;
  double start = 0;
  double save = 0;
  double poweroff = 0;
  double cv = 0.5;
};

// The provider's prior, or the "default" row for a provider not listed.
const PhasePrior& phase_prior(std::string_view provider);

// verify, as a fraction of one epoch's learn time, when no full run measured it: a test pass over a sixth of
// the training set's size at about a third of a training step's cost (MNIST: 10k test vs 60k train images).
inline constexpr double kVerifyPerEpoch = 0.06;

}  // namespace tsum::billing
