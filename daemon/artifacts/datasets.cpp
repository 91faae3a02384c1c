#include "daemon/artifacts/datasets.h"

#include <filesystem>

#include "daemon/artifacts/dataset_format.h"
#include "daemon/artifacts/tar_archive.h"

namespace tsum::daemon {

using nlohmann::json;

namespace {
constexpr const char* kColumns = "name, format, sha256, bytes, files, created_at";

Dataset row_of(const Stmt& s) {
  Dataset d{s.text(0), s.text(1), s.text(2), static_cast<std::uint64_t>(s.int64(3)), json::array(), s.real(5)};
  auto files = json::parse(s.text(4), nullptr, false);
  if (files.is_array()) d.files = std::move(files);
  return d;
}
}  // namespace

json Dataset::to_json() const {
  return {{"name", name}, {"format", format}, {"sha256", sha256}, {"bytes", bytes}, {"files", files},
          {"created_at", created_at}};
}

Result<Dataset> Datasets::add(const std::string& name, const std::string& format, const std::string& archive) {
  std::error_code ec;
  auto drop = [&](Error e) {
    std::filesystem::remove(archive, ec);
    return e;
  };
  if (!is_dataset_name(name))
    return drop(Error{Code::invalid_argument, "data set name '" + name +
                                                  "' must be 1-64 letters, digits, '.', '_' or '-'"});
  if (auto existing = get(name); existing) return drop(Error{Code::already_exists, "data set '" + name + "' exists"});
  auto files = check_dataset_archive(archive, format);
  if (!files) return drop(files.error());
  auto blob = blobs_.adopt(archive);
  if (!blob) return blob.error();
  Dataset d{name, format, blob->sha256, blob->bytes, json::array(), clock_.now_s()};
  for (const auto& f : *files) d.files.push_back({{"name", f.name}, {"bytes", f.size}});
  auto st = db_.prepare("INSERT INTO datasets (name, format, sha256, bytes, files, created_at) VALUES (?, ?, ?, ?, ?, ?)");
  if (!st) return st.error();
  if (auto s = st->bind(d.name, d.format, d.sha256, static_cast<int64_t>(d.bytes), d.files.dump(), d.created_at).run(); !s)
    return s.error();
  return d;
}

Status Datasets::ensure(const std::string& name, const std::string& format, const std::vector<std::string>& files) {
  if (get(name)) return {};
  std::string tmp = blobs_.temp_path("dataset");
  if (auto s = write_tar_gz(tmp, files); !s) return s;
  auto d = add(name, format, tmp);
  if (!d) return d.error();
  return {};
}

Result<std::vector<Dataset>> Datasets::list() {
  auto st = db_.prepare(std::string("SELECT ") + kColumns + " FROM datasets ORDER BY name");
  if (!st) return st.error();
  std::vector<Dataset> out;
  for (;;) {
    auto row = st->step();
    if (!row) return row.error();
    if (!*row) break;
    out.push_back(row_of(*st));
  }
  return out;
}

Result<Dataset> Datasets::get(const std::string& name) {
  auto st = db_.prepare(std::string("SELECT ") + kColumns + " FROM datasets WHERE name = ?");
  if (!st) return st.error();
  st->bind(name);
  auto row = st->step();
  if (!row) return row.error();
  if (!*row) return make_error(Code::not_found, "no data set '" + name + "'");
  return row_of(*st);
}

Status Datasets::remove(const std::string& name) {
  auto d = get(name);
  if (!d) return d.error();
  auto users = db_.prepare(
      "SELECT COUNT(*) FROM runs r JOIN experiments e ON e.id = r.experiment_id WHERE r.status NOT IN "
      "('done', 'failed', 'cancelled') AND EXISTS (SELECT 1 FROM json_each(e.spec, '$.workload.dataset') d "
      "WHERE d.value = ?1)");  // one name or a list of them
  if (!users) return users.error();
  users->bind(name);
  auto row = users->step();
  if (!row) return row.error();
  if (*row && users->int64(0) > 0)
    return make_error(Code::already_exists, "data set '" + name + "' is in use by " + std::to_string(users->int64(0)) +
                                                " queued or live run(s)");
  auto del = db_.prepare("DELETE FROM datasets WHERE name = ?");
  if (!del) return del.error();
  if (auto s = del->bind(name).run(); !s) return s;
  // The blob stays while another data set (or a run's pinned copy) has the same bytes.
  auto same = db_.prepare("SELECT COUNT(*) FROM datasets WHERE sha256 = ?");
  if (!same) return {};
  auto more = same->bind(d->sha256).step();
  if (more && *more && same->int64(0) == 0) blobs_.remove(d->sha256);
  return {};
}

Result<json> Datasets::add_workdir(const std::string& archive) {
  std::error_code ec;
  auto entries = read_tar(archive);
  if (!entries) {
    std::filesystem::remove(archive, ec);
    return make_error(Code::invalid_argument, "the body is not a folder's tar.gz: " + entries.error().detail);
  }
  int64_t files = 0;
  for (const auto& e : *entries) files += e.is_dir ? 0 : 1;
  auto blob = blobs_.adopt(archive);
  if (!blob) return blob.error();
  auto st = db_.prepare("INSERT INTO workdirs (sha256, bytes, files, created_at) VALUES (?, ?, ?, ?) "
                        "ON CONFLICT (sha256) DO NOTHING");
  if (!st) return st.error();
  if (auto s = st->bind(blob->sha256, static_cast<int64_t>(blob->bytes), files, clock_.now_s()).run(); !s)
    return s.error();
  return workdir(blob->sha256);
}

Result<json> Datasets::workdir(const std::string& sha256) {
  auto st = db_.prepare("SELECT bytes, files FROM workdirs WHERE sha256 = ?");
  if (!st) return st.error();
  st->bind(sha256);
  auto row = st->step();
  if (!row) return row.error();
  if (!*row) return make_error(Code::not_found, "no folder sha256:" + sha256 + " was uploaded (POST /v1/workdirs)");
  return json{{"sha256", sha256}, {"workdir", "sha256:" + sha256}, {"bytes", st->int64(0)}, {"files", st->int64(1)}};
}

}  // namespace tsum::daemon
