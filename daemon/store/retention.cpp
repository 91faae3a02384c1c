#include "daemon/store/retention.h"

#include <filesystem>
#include <vector>

namespace tsum::daemon {

namespace {

// The runs that hold rows in `table` (by its run_id index), from the smallest id, one index seek each: those a pass
// must look at, whatever the history.
Result<std::vector<int64_t>> runs_holding(Db& db, const std::string& table, const std::string& where, int64_t after,
                                          int limit) {
  auto st = db.prepare("WITH RECURSIVE k(id) AS (SELECT (SELECT MIN(run_id) FROM " + table + " WHERE run_id > ?1" +
                       where + ") UNION ALL SELECT (SELECT MIN(run_id) FROM " + table + " WHERE run_id > k.id" + where +
                       ") FROM k WHERE k.id IS NOT NULL) SELECT id FROM k WHERE id IS NOT NULL LIMIT ?2");
  if (!st) return st.error();
  st->bind(after, int64_t{limit});
  return st->int64s();
}

Result<bool> finished_before(Db& db, int64_t run_id, double cutoff) {
  auto st = db.prepare("SELECT 1 FROM runs WHERE id = ? AND status IN ('done', 'failed', 'cancelled') AND updated_at < ?");
  if (!st) return st.error();
  st->bind(run_id, cutoff);
  return st->step();
}

Result<int64_t> changes_of(Db& db, const std::string& sql, int64_t run_id) {
  auto st = db.prepare(sql);
  if (!st) return st.error();
  if (auto s = st->bind(run_id).run(); !s) return s.error();
  return static_cast<int64_t>(db.changes());
}

}  // namespace

Result<LetGo> let_go(Db& db, BlobStore* blobs, const std::set<std::string>& keep, double cutoff, int batch) {
  LetGo out;
  std::vector<std::string> dropped;  // blobs of artifact rows deleted
  std::string names;
  for (const char* n : kLetGoArtifacts) names += std::string(names.empty() ? "'" : ", '") + n + "'";
  {
    Transaction tx(db);
    if (!tx.begun()) return tx.begun().error();
    std::set<int64_t> touched;
    // The runs holding log lines or let-go artifacts, oldest first; a live or recent one is stepped over. A pass
    // looks at each such run once: what is held, not what was ever run.
    std::vector<std::pair<std::string, std::string>> holders = {{"run_log_lines", ""}};
    for (const char* n : kLetGoArtifacts) holders.push_back({"run_artifacts", std::string(" AND name = '") + n + "'"});
    for (const auto& [table, where] : holders) {
      int64_t after = 0;
      while (static_cast<int>(touched.size()) < batch) {
        auto ids = runs_holding(db, table, where, after, 256);
        if (!ids) return ids.error();
        if (ids->empty()) break;
        for (int64_t id : *ids) {
          after = id;
          auto old = finished_before(db, id, cutoff);
          if (!old) return old.error();
          if (!*old || static_cast<int>(touched.size()) >= batch) continue;
          touched.insert(id);
          if (table == "run_log_lines") {
            auto n = changes_of(db, "DELETE FROM run_log_lines WHERE run_id = ?", id);
            if (!n) return n.error();
            out.lines += *n;
            continue;
          }
          auto shas = db.prepare("SELECT sha256 FROM run_artifacts WHERE run_id = ? AND name IN (" + names + ")");
          if (!shas) return shas.error();
          shas->bind(id);
          for (;;) {
            auto row = shas->step();
            if (!row) return row.error();
            if (!*row) break;
            dropped.push_back(shas->text(0));
          }
          auto n = changes_of(db, "DELETE FROM run_artifacts WHERE run_id = ? AND name IN (" + names + ")", id);
          if (!n) return n.error();
          out.artifacts += *n;
        }
      }
    }
    out.runs = static_cast<int64_t>(touched.size());
    auto tokens = db.prepare(
        "DELETE FROM tokens WHERE hash IN (SELECT hash FROM tokens WHERE scope = 'run' AND revoked_at < ? LIMIT ?)");
    if (!tokens) return tokens.error();
    if (auto s = tokens->bind(cutoff, int64_t{batch} * 8).run(); !s) return s.error();
    out.tokens = static_cast<int64_t>(db.changes());
    if (auto c = tx.commit(); !c) return c.error();
  }
  // The files, once the rows are gone for good: each only where no row names it any more.
  if (!blobs) return out;
  for (const auto& sha : dropped) {
    if (keep.count(sha)) continue;
    auto used = db.prepare(
        "SELECT EXISTS (SELECT 1 FROM run_artifacts WHERE sha256 = ?1) OR EXISTS (SELECT 1 FROM datasets WHERE "
        "sha256 = ?1) OR EXISTS (SELECT 1 FROM workdirs WHERE sha256 = ?1)");
    if (!used) return used.error();
    used->bind(sha);
    auto row = used->step();
    if (!row) return row.error();
    if (*row && used->int64(0)) continue;
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(blobs->path_of(sha), ec);
    if (!ec) out.blob_bytes += bytes;
    blobs->remove(sha);
  }
  return out;
}

}  // namespace tsum::daemon
