// The room workload/train/ owns one tsum-train run: its options and device, the training loops, the checkpoint it
// resumes from, the JSON-line events the agent reads and main.cpp, which dispatches every subcommand. It calls every
// other room of workload/.
//
// One complete tsum-train run: set threads and seed, resolve the model's defaults, load and
// normalize the data (or generate synthetic data), build the model and optimizer, train, evaluate,
// save; emitting ready / epoch* / learn_end / verify / saved (and resumed, checkpoint: train_state.h). The saved event reports the
// checkpoint's absolute path. Event keys keep their image-era names for every model: "images"
// counts examples (token sequences for bilstm).
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"
#include "workload/data/dataset.h"
#include "workload/train/event_writer.h"
#include "workload/train/options.h"

namespace tsum::workload {

// The settings a run uses once the model's defaults (model_registry.h) fill what the flags leave
// out. The model's learning rate and decay go with its optimizer: naming another optimizer without
// --lr gives that optimizer's default learning rate and no decay.
struct TrainingPlan {
  DataKind dataset = DataKind::idx;
  std::string data_dir;  // "" for synthetic
  std::int64_t batch = 0;
  std::string optimizer;
  double lr = 0.0;
  double decay = 0.0;
};

// invalid_argument for an unknown model, data set or optimizer.
Result<TrainingPlan> plan_training(const Options& options);

// Runs `options` to completion. Errors: invalid_argument or not_found for bad flag values (model,
// optimizer, data set, a model that does not fit the data) or bad data (the detail names the file);
// internal/unavailable for anything else, including a failed save.
Status run_training(const Options& options, EventWriter& events);

// tsum-train's exit status after SIGTERM, once its checkpoint is written (EX_TEMPFAIL: go on later).
inline constexpr int kExitStopped = 75;

// From now on SIGTERM asks run_training to write a checkpoint after the step in progress and stop
// (Code::cancelled), and SIGPIPE is ignored (a dead peer's socket fails the write). Without it SIGTERM ends the
// process as usual.
void install_stop_handler();

// Exit status for a run's outcome: 0 ok, 75 stopped by SIGTERM after a checkpoint, 2 bad usage or
// bad data, 1 anything else.
int exit_code_for(const Status& status);

}  // namespace tsum::workload
