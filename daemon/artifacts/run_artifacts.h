// RunArtifacts: what a run's agent uploads in its save phase (model.pt, events.jsonl, samples.csv), received
// over PUT /v1/runs/{id}/artifacts/{name}, checked against the sha256 the agent sends, kept as blobs and listed
// per run in the run_artifacts table. An upload may come in pieces: each piece names its byte range
// ("Content-Range: bytes A-B/TOTAL"), must start where the held part ends (offset()), and the last piece
// completes the artifact. A recorded artifact is never overwritten: the same bytes again are accepted (a
// retried upload), different bytes are a conflict.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "daemon/artifacts/blob_store.h"
#include "daemon/store/db.h"

namespace tsum::daemon {

struct Artifact {
  std::string name;
  std::string sha256;
  std::uint64_t bytes = 0;
  nlohmann::json to_json() const { return {{"name", name}, {"bytes", bytes}, {"sha256", sha256}}; }
};

struct ByteRange {
  std::uint64_t first = 0, last = 0, total = 0;  // inclusive, as Content-Range writes it
};

// "bytes A-B/TOTAL" with A <= B < TOTAL; nullopt otherwise.
std::optional<ByteRange> parse_content_range(std::string_view header);

// Artifact names: segments joined by '/' (a job's file under a subdirectory of /tsum/out), each 1..128 of
// letters, digits, '.', '_' and '-', not starting with '.'; at most 255 in all. In a URL the '/' is %2F.
bool is_artifact_name(std::string_view name);

struct UploadResult {
  bool complete = false;
  std::uint64_t offset = 0;  // bytes held so far (the whole size once complete)
  std::optional<Artifact> artifact;  // once complete
};

class RunArtifacts {
 public:
  // Partial uploads live under upload_dir (created if needed), on the blob store's file system ideally.
  RunArtifacts(Db& db, BlobStore& blobs, std::string upload_dir, const Clock& clock);

  // Takes `body` (a file: moved or removed). `range` absent: the body is the whole artifact. `sha256`: what the
  // whole artifact must hash to. invalid_argument for a bad name or hash, or bytes that do not hash to sha256
  // (the partial is dropped); already_exists when the piece does not start at offset() (detail names the
  // offset) or the name already holds other bytes.
  Result<UploadResult> receive(int64_t run_id, const std::string& name, const std::string& body,
                               std::optional<ByteRange> range, const std::string& sha256);
  // Bytes held of an unfinished upload (0 when none); the size when the artifact is complete.
  std::uint64_t offset(int64_t run_id, const std::string& name);
  Result<std::vector<Artifact>> list(int64_t run_id);
  // not_found when the run has no such artifact.
  Result<Artifact> get(int64_t run_id, const std::string& name);
  const BlobStore& blobs() const { return blobs_; }

 private:
  std::string partial_path(int64_t run_id, const std::string& name) const;
  Result<Artifact> record(int64_t run_id, const std::string& name, const std::string& file, const std::string& sha256);

  Db& db_;
  BlobStore& blobs_;
  std::string upload_dir_;
  const Clock& clock_;
};

}  // namespace tsum::daemon
