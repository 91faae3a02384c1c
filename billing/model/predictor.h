// The room billing/model/ owns what a config's run is predicted to take: the predictor (every phase, from measured
// runs), the resource model across families, the per-family scaling curves, NNLS and the phase priors. Pure math; it
// calls only billing/'s shared types and common/.
//
// Predicts the 8 phases of a config's t_sum from a history of measured runs. Every prediction is a
// distribution: a vector of samples per phase (and of their sum), drawn with a fixed seed per config.
//
// A config with kEmpiricalRuns (3) or more full runs is predicted by those runs themselves: draw i is run
// i mod R, all 8 phases together, so a table of measured runs is priced exactly as measured (the default
// 2520 draws weight every run count up to 10 equally). Otherwise, phase by phase:
// learn: a partial run (a probe) is first scaled to a full run. With a steady throughput it is
//   learn + (images left) / rate; without, learn / f, f the fraction of the workload it covered
//   (images_done / (epochs * images_per_epoch), or epochs_done / epochs); when a config has such runs at two
//   or more fractions, learn = a + b·f is fitted by NNLS instead, so a fixed warm-up (a) is not multiplied up.
//   Then:
//   - a config with runs of its own: normal around their mean, spread max(sample sd, noise_cv·mean), plus
//     5% when all its runs were partial;                                                       basis "measured"
//   - otherwise, when the runs describe their machines' memory (or PredictorOptions::model says so), the
//     resource model over every measured config (resource_model.h): cores × nodes, memory × nodes and family,
//     so a family with no run borrows from the others.                      basis "family" or "cross-family"
//   - otherwise the learn curve of its group (CPU family over cores when gpus == 0; GPU type over GPU count)
//     from ScalingModel (see scaling.h), fitted to the group's per-config means.  basis "fitted",
//     "extrapolated" or "sparse"; no run in the group: not_found (the search probes such a group first).
//   noise_cv is the pooled relative spread of configs with two or more full runs, at least min_noise_cv.
// startup, install, load_data, start, poweroff: the runs of the same provider × instance type; else of the
//   provider; else the provider's prior (phase_priors.h). install is further split by image_cached (a cached
//   image is what makes it short); the other phases do not depend on it, so they pool both. Normal around
//   the mean with spread max(sd, 5%) (10% with one run). Partial runs count here: these phases are whole in
//   a probe.
// verify, save: as above but from full runs only; verify with no full run of the config is the history's
//   median verify/learn ratio times the predicted learn, else kVerifyPerEpoch of an epoch.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "billing/measured_run.h"
#include "billing/model/resource_model.h"
#include "billing/model/scaling.h"
#include "common/result.h"

namespace tsum::billing {

// A config with this many full runs is predicted by the runs themselves.
inline constexpr size_t kEmpiricalRuns = 3;

// How a config without runs of its own is predicted: from the resources it shares with the measured ones
// across families (resource_model.h), or from the scaling curve of its own family only (scaling.h).
// automatic: resources when a measured run describes its machine's memory.
enum class LearnModel { automatic, resources, family };

struct PredictorOptions {
  int samples = 2520;          // samples per prediction; 2520 is divisible by every run count up to 10
  int bootstrap = 200;         // curves per scaling model
  double min_noise_cv = 0.02;  // floor on run-to-run spread
  uint64_t seed = 1;
  LearnModel model = LearnModel::automatic;
  int particles = 6000;       // of the resource model
  double memory_lo_gib = 0;   // the memory range of the configs planned (the resource model's prior); 0 = wide
  double memory_hi_gib = 0;
};

struct Prediction {
  std::array<std::vector<double>, 8> phases;  // samples per phase, kPhaseNames order
  std::vector<double> t_sum;                  // per-sample sum of the phases
  std::string basis;           // of learn: "measured"; "family" or "cross-family" (the resource model, from
                               // measured configs of its own family, or of others only); or the family curve's
                               // "fitted", "extrapolated" or "sparse"
  double log_sd = 0;           // the resource model's spread of log learn time: how far the prediction reached
  std::string overhead_basis;  // "measured" (this instance type), "provider" (its other types) or "prior"
  int runs = 0;                // measured runs of this very config, full or partial
  double epoch_s = 0;          // mean learn seconds per epoch

  double mean(int phase) const;
  double t_mean() const;
};

class Predictor {
 public:
  // invalid_argument for a run with a negative or non-finite phase, a fraction <= 0, images_done without
  // the workload's images_per_epoch, or samples/bootstrap < 1.
  static Result<Predictor> learn(std::span<const MeasuredRun> history, const Workload& workload,
                                 const PredictorOptions& opt = {});

  // not_found when neither the config nor its group has a measured run.
  Result<Prediction> predict(const ConfigSpec& cfg) const;

  const Workload& workload() const { return workload_; }
  const PredictorOptions& options() const { return opt_; }
  double noise_cv() const { return noise_cv_; }
  // Where the run-to-run spread comes from, for a human: "learned from N configs run more than once: cv X%"
  // or "a prior of X% (no config has two full runs yet)".
  std::string spread_source() const;
  // The scaling model of a group key ("cpu:<family>" or "gpu:<type>"), nullptr if none.
  const ScalingModel* curve(const std::string& group) const;

  // The group a config's learn time is fitted in, and the count it scales over.
  static std::string group_of(const ConfigSpec& cfg);
  static double count_of(const ConfigSpec& cfg);

 private:
  struct ConfigRuns {
    std::vector<double> learn_full;  // per run, scaled to the full workload
    std::optional<double> memory_used;  // the largest MeasuredRun::memory_used of its runs
    std::vector<PhaseSeconds> full_runs;
    bool any_full = false;
  };
  struct PhaseValues {
    std::array<std::vector<double>, 8> v;
  };

  Status add_learn(std::span<const MeasuredRun> history);
  std::optional<double> learn_at_rate(const MeasuredRun& r, double fraction) const;
  Prediction empirical(const std::vector<PhaseSeconds>& runs) const;
  void add_overheads(std::span<const MeasuredRun> history);
  Status fit_groups(std::span<const MeasuredRun> history);
  std::vector<double> learn_samples(const ConfigSpec& cfg, Prediction& p, std::mt19937_64& rng) const;
  std::vector<double> phase_samples(const ConfigSpec& cfg, int phase, const std::vector<double>& learn,
                                    Prediction& p, std::mt19937_64& rng) const;

  Workload workload_;
  PredictorOptions opt_;
  double noise_cv_ = 0.02;
  int repeated_configs_ = 0;  // configs with two or more full runs, which noise_cv_ is learned from
  double verify_ratio_ = -1;  // median verify / learn over full runs, -1 if none
  std::map<std::string, ConfigRuns> configs_;
  std::map<std::string, std::pair<double, std::string>> config_group_;  // config -> (count, group)
  std::map<std::string, ScalingModel> groups_;
  std::map<std::string, ConfigSpec> config_spec_;
  bool describes_memory_ = false;
  std::optional<ResourceModel> resources_;
  std::map<std::string, PhaseValues> by_type_;      // provider|instance_type|cached
  std::map<std::string, PhaseValues> by_provider_;  // provider|cached
};

}  // namespace tsum::billing
