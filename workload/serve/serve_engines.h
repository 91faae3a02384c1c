// `tsum-train serve` (serve.h): the engine --model or --torchscript names, and the command.
#pragma once

#include <memory>

#include "common/result.h"
#include "workload/serve/batcher.h"
#include "workload/train/event_writer.h"
#include "workload/train/options.h"

namespace tsum::workload {

// The engine `options` name: a registry image model (on its placement, in eval mode), a TorchScript file, or
// "delay". invalid_argument for a model that does not read images, a file that is not TorchScript or does not run
// on its --input-shape; unavailable for a device this build cannot use.
Result<std::unique_ptr<Engine>> make_engine(const ServeOptions& options);

// Loads and warms the model, serves until SIGTERM, SIGINT or --duration, then stops (finishing the requests in
// progress). unavailable when the address cannot be bound.
Status run_serve(const ServeOptions& options, EventWriter& events);

}  // namespace tsum::workload
