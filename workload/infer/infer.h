// The room workload/infer/ owns measuring inference: `tsum-train infer` (throughput and latency per batch size), the
// load generator, the latency files, the HTTP client and the JPEG images they read. It calls models/, data/, serve/
// (the protocol) and machine/.
//
// `tsum-train infer`: inference throughput, latency and memory per batch size, after the seed's
// ResNet-50 study.
//
// For each batch size: `warmup` unmeasured batches, then `iterations` measured ones. A batch is
// loaded (JPEGs decoded and normalized into a channels-last float tensor, or, with --source memory,
// copied from images decoded once up front) and then run through the model in eval and inference
// mode, under the placement's autocast; the predicted classes are copied back to the host.
//   sync   one thread: load a batch, compute it, load the next.
//   async  `loaders` threads load batches into a bounded queue of `queue` batches while the main
//          thread computes: loading overlaps compute, at the price of batches held in memory.
// Latency is per batch, from the start of its loading to its predictions on the host (in async
// mode it includes time waiting in the queue); images/s is measured images over the measured
// wall time. Peak RSS is reset (/proc/self/clear_refs) before each batch size, since the seed saw
// async at batch 1 need 4-4.4x the memory of sync.
//
// Events (stdout, one JSON object per line, event_writer.h):
//   ready      model, params, threads, device, precision, mode, source, images, loaders, queue
//   infer      batch, iterations, images, seconds, images_per_s, p50_ms, p99_ms, peak_rss_bytes,
//              peak_rss_reset (false where the kernel refused the reset: the peak is then the
//              process's so far)
//   infer_end  seconds
#pragma once

#include "common/result.h"
#include "workload/train/event_writer.h"
#include "workload/train/options.h"

namespace tsum::workload {

// invalid_argument for an unknown or non-image model or bad images (the detail names the file);
// not_found for a missing image directory; unavailable for a device this build cannot use.
Status run_infer(const InferOptions& options, EventWriter& events);

}  // namespace tsum::workload
