// The routes that move bytes between the daemon and its machines (docs/artifacts.md):
//   POST   /v1/datasets?name=NAME&format=FORMAT   a tar or tar.gz body, streamed to disk → 201 the data set
//                                                (413 past the upload limit; 409 the name exists; 422 bad archive)
//   GET    /v1/datasets, GET /v1/datasets/{name}  {"datasets": [...]} / one
//   DELETE /v1/datasets/{name}                     204; 409 while a queued or live run uses it
//   GET    /v1/blobs/{sha256}                      the trainer bundle or a data set by hash, Range supported; an
//                                                admin token, or a run token (of a live run) for those two kinds
//   PUT    /v1/runs/{id}/artifacts/{name}          the run's agent uploads a result: X-Tsum-Sha256 names the whole
//                                                artifact's hash; "Content-Range: bytes A-B/TOTAL" sends a piece.
//                                                201 complete, 202 {"offset"} partial, 409 a piece out of place
//   GET    /v1/runs/{id}/uploads/{name}            {"offset": N}: bytes held of an unfinished upload (to resume)
//   GET    /v1/runs/{id}/artifacts                 {"artifacts": [{"name","bytes","sha256"}]}
//   GET    /v1/runs/{id}/artifacts/{name}          one artifact's bytes, Range supported
#pragma once

#include <cstdint>
#include <string>

#include "api/http/router.h"
#include "providers/byo/byo_provider.h"
#include "daemon/artifacts/datasets.h"
#include "daemon/artifacts/run_artifacts.h"
#include "daemon/store/store.h"
#include "daemon/store/token_store.h"

namespace tsum::api {

struct ArtifactContext {
  daemon::Datasets& datasets;
  daemon::RunArtifacts& artifacts;
  daemon::BlobStore& blobs;
  daemon::TokenStore& tokens;
  daemon::Store& store;
  std::string trainer_sha256;        // the bundle run tokens may fetch
  std::string agent_sha256;          // and the agent script (a cloud machine's bootstrap fetches it)
  std::uint64_t dataset_limit = 0;   // largest data set upload; 0: the server's upload limit
};

void add_artifact_routes(Router& router, ArtifactContext ctx);

// GET /v1/join/{code}: the shell script a byo machine runs (no token: the one-time code is the secret; 404 unknown
// or revoked, 409 used, 504 expired). POST /v1/join/{code}/left: that machine finished its clean-up (204).
void add_join_routes(Router& router, providers::ByoProvider& byo);

}  // namespace tsum::api
