// Retention (issue 61): what a run grows besides the facts plans and bills are made of can be let go once the run
// has been finished for a while (`tsumd serve --keep-logs DAYS`). Let go: its output's log lines, its resource
// samples and event log (the samples.csv and events.jsonl it saved, with their files where nothing else names
// them), and its revoked token. Kept for ever: the run, its phases and marks, its epochs, its per-phase resource
// statistics, its costs and charges, and the artifacts a user asked the job to save (model.pt and the like). A run
// whose lines were let go reads as lines dropped (GET /v1/runs/{id}/logs), as the cap's middle does.
//
// Each call lets go of at most `batch` runs' things in one transaction, walking the tables that hold them (their
// own indexes), so its cost is what is still held, not the history.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "common/result.h"
#include "daemon/artifacts/blob_store.h"
#include "daemon/store/db.h"

namespace tsum::daemon {

inline constexpr const char* kLetGoArtifacts[] = {"samples.csv", "events.jsonl"};

struct LetGo {
  int64_t runs = 0;       // runs whose log lines or artifacts went
  int64_t lines = 0;      // log lines
  int64_t artifacts = 0;  // artifact rows
  int64_t tokens = 0;     // revoked run tokens
  uint64_t blob_bytes = 0;  // files removed from the blob store
};

// Lets go of what runs finished before `cutoff` (daemon clock, seconds) grew, at most `batch` runs of it, and of
// the run tokens revoked before then. `keep`: blobs never to remove (the trainer bundle, the agent). `blobs` may be
// null: rows go, files stay.
Result<LetGo> let_go(Db& db, BlobStore* blobs, const std::set<std::string>& keep, double cutoff, int batch = 200);

}  // namespace tsum::daemon
