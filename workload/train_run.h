// One complete tsum-train run: set threads and seed, build the model and optimizer, load and
// normalize the data, train, evaluate, save; emitting ready / epoch* / learn_end / verify / saved.
// The saved event reports the checkpoint's absolute path.
#pragma once

#include "common/result.h"
#include "workload/event_writer.h"
#include "workload/options.h"

namespace tsum::workload {

// Runs `options` to completion. Errors: invalid_argument or not_found for bad flags values (model,
// optimizer) or bad data (the detail names the file); internal/unavailable for anything else,
// including a failed save.
Status run_training(const Options& options, EventWriter& events);

// Exit status for a run's outcome: 0 ok, 2 bad usage or bad data, 1 anything else.
int exit_code_for(const Status& status);

}  // namespace tsum::workload
