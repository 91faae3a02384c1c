// Past runs of a tsum database as trace rows, for `tsumd serve --trace-db FILE` (docs/trace.md): the finished
// runs become the same billing::CsvRun rows a `tsumd plan --from-csv` CSV gives, so the trace provider replays
// a database exactly as it replays a CSV.
//
// A run qualifies when its status is done and all 8 phases have a begin and an end on one clock (end >= begin).
// Where each field comes from:
//   config                      "<provider>/<instance_type>" of the run row
//   provider, instance_type     the run row
//   price_per_hour, currency    the run row: the offer's price when the run was created
//   phases                      end - begin of the write-once marks, as the API reports them (startup and
//                               poweroff on the daemon's clock, install … save on the agent's)
//   cores, gpus, gpu_type,      the run's machine (runs.machine, stored from its offer since schema 8: family
//   cpu_family, memory_gib,     as cpu_family); for older runs: the instance handle's data when it names them
//   cpu_model                   (trace instances do), else N for local-<N>c, else the offer of that
//                               instance_type in the catalog of that provider among `catalogs`, else 0
//   nodes                       the run row; config gets "/x<N>" when N > 1
//   line                        the run's id (a trace instance's handle shows it as `line`)
// Rows come experiment by experiment (ascending id), then by config and repetition.
//
// The file is opened read-only (Db::open_read_only) and never migrated or written. Schema versions from 2
// (phase_stats, read with the marks) up to this binary's latest are read; others are refused.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "billing/prices/catalog.h"
#include "billing/plan_csv.h"
#include "common/result.h"

namespace tsum::daemon {

// Fills cfg's machine (cores, gpus, gpu_type, cpu_family, memory_gib, cpu_model) from a run's stored `machine`
// (providers::machine_of its offer); fields the JSON does not name keep cfg's values.
void describe_machine(const nlohmann::json& machine, billing::ConfigSpec& cfg);

// Errors, none naming the path (the caller does): not_found for a missing file, an experiment id the database
// lacks (the message lists those it has) or no qualifying run (the message counts the runs found by status
// and why none qualified); invalid_argument for a file that is not a tsum database or has a schema version
// outside the readable range. experiment_ids empty: every experiment.
Result<std::vector<billing::CsvRun>> read_past_runs(const std::string& db_path,
                                                    const std::vector<int64_t>& experiment_ids = {},
                                                    std::span<const billing::Catalog> catalogs = {});

}  // namespace tsum::daemon
