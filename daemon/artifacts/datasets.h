// Datasets: the named data sets machines download (POST/GET/DELETE /v1/datasets). Each is a tar (or tar.gz) of
// its files, checked against its format on upload (daemon/artifacts/dataset_format.h), kept as a blob by its
// sha256 and recorded in the datasets table. A name is taken once: upload a new version under a new name, or
// delete the old one first. A data set a queued or live run uses cannot be deleted.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/clock.h"
#include "daemon/artifacts/blob_store.h"
#include "daemon/artifacts/dataset_format.h"
#include "daemon/store/db.h"

namespace tsum::daemon {

struct Dataset {
  std::string name;
  std::string format;
  std::string sha256;
  std::uint64_t bytes = 0;
  nlohmann::json files = nlohmann::json::array();  // [{"name", "bytes"}]
  double created_at = 0;

  nlohmann::json to_json() const;
};

class Datasets {
 public:
  Datasets(Db& db, BlobStore& blobs, const Clock& clock) : db_(db), blobs_(blobs), clock_(clock) {}

  // Checks the archive at `archive` (a file this call takes: it is moved into the blob store or removed) and
  // records it. invalid_argument for a bad name, format or archive (with the reason); already_exists when the
  // name is taken.
  Result<Dataset> add(const std::string& name, const std::string& format, const std::string& archive);
  // Packs `files` (paths on this machine) into a tar.gz and adds it under `name`, unless that name exists.
  Status ensure(const std::string& name, const std::string& format, const std::vector<std::string>& files);
  Result<std::vector<Dataset>> list();
  // not_found for an unknown name.
  Result<Dataset> get(const std::string& name);
  // not_found; already_exists (HTTP 409) while a queued or live run's experiment names it.
  Status remove(const std::string& name);

  // A folder job's folder: `archive` (a gzip tar this call takes) is checked and kept by its sha256. The same
  // bytes again are the same record. invalid_argument naming what is wrong with the archive.
  Result<nlohmann::json> add_workdir(const std::string& archive);
  // {"sha256", "bytes", "files"}; not_found when no such folder was uploaded.
  Result<nlohmann::json> workdir(const std::string& sha256);

 private:
  Db& db_;
  BlobStore& blobs_;
  const Clock& clock_;
};

}  // namespace tsum::daemon
