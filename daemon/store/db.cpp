#include "daemon/store/db.h"

#include <charconv>

namespace tsum::daemon {

namespace {
bool out_of_space(int rc) { return (rc & 0xff) == SQLITE_FULL || rc == SQLITE_IOERR_WRITE || rc == SQLITE_IOERR_FSYNC; }

// msg: sqlite3_exec's message, else the connection's last one.
Error sqlite_error(sqlite3* db, std::string_view what, const char* msg = nullptr) {
  int rc = sqlite3_extended_errcode(db);
  if (!msg) msg = sqlite3_errmsg(db);
  Code code = Code::internal;
  if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) code = Code::unavailable;
  if ((rc & 0xff) == SQLITE_CONSTRAINT) code = Code::already_exists;
  // Out of space (the disk or SQLite's own limit): nothing was written, and the same write succeeds once space
  // returns. unavailable (503) tells a client, and an agent's spool, to try again later.
  if (out_of_space(rc))
    return make_error(Code::unavailable, std::string(what) + ": the database's disk is full or failing (" + msg +
                                             "); nothing was written, retry when space returns");
  return make_error(code, std::string(what) + ": " + msg);
}

Result<int> migration_number(const EmbeddedFile& m) {
  int n = 0;
  auto [p, ec] = std::from_chars(m.name.data(), m.name.data() + m.name.size(), n);
  if (ec != std::errc() || p != m.name.data() + 4)
    return make_error(Code::internal, "migration " + std::string(m.name) + " lacks an NNNN_ prefix");
  return n;
}
}  // namespace

Result<int> latest_schema_version(std::span<const EmbeddedFile> migrations) {
  int latest = 0;
  for (const auto& m : migrations) {
    auto n = migration_number(m);
    if (!n) return n.error();
    latest = std::max(latest, *n);
  }
  return latest;
}

namespace {
constexpr size_t kIdlePerSql = 4;     // the same statement live at once: nesting is shallow
constexpr size_t kMaxSqlTexts = 512;  // distinct SQL texts (the daemon's are constants with ? parameters)
}  // namespace

void Stmt::release() {
  if (!s_) return;
  if (pool_ && !pool_->closed && home_ && home_->size() < kIdlePerSql) {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
    home_->push_back(s_);
  } else {
    sqlite3_finalize(s_);
  }
  s_ = nullptr;
}

std::string Stmt::text(int col) const {
  auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, col));
  return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(s_, col))) : std::string();
}

Result<bool> Stmt::step() {
  int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) {
    if (pool_ && pool_->has_full && !sqlite3_stmt_readonly(s_) && sqlite3_get_autocommit(db_)) pool_->clear_full();
    return false;
  }
  auto e = sqlite_error(db_, "sqlite step");
  if (pool_ && out_of_space(sqlite3_extended_errcode(db_))) pool_->set_full(e.detail);
  return e;
}

Result<std::vector<int64_t>> Stmt::int64s() {
  std::vector<int64_t> out;
  for (;;) {
    auto row = step();
    if (!row) return row.error();
    if (!*row) return out;
    out.push_back(int64(0));
  }
}

Status Stmt::run() {
  for (;;) {
    auto r = step();
    if (!r) return r.error();
    if (!*r) return {};
  }
}

Result<std::unique_ptr<Db>> Db::open(const std::string& path) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = raw ? sqlite3_errmsg(raw) : "out of memory";
    sqlite3_close(raw);
    return make_error(Code::unavailable, "open database " + path + ": " + msg);
  }
  std::unique_ptr<Db> db(new Db(raw));
  sqlite3_busy_timeout(raw, 5000);
  if (auto s = db->exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;"); !s)
    return make_error(s.code(), "database " + path + ": " + s.error().detail);
  return db;
}

Result<std::unique_ptr<Db>> Db::open_read_only(const std::string& path) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = raw ? sqlite3_errmsg(raw) : "out of memory";
    sqlite3_close(raw);
    return make_error(Code::unavailable, "open database " + path + " read-only: " + msg);
  }
  std::unique_ptr<Db> db(new Db(raw));
  sqlite3_busy_timeout(raw, 5000);
  if (auto s = db->exec("PRAGMA query_only=ON"); !s) return s.error();
  return db;
}

void Db::count_work(bool on) {
  if (!on) {
    sqlite3_progress_handler(db_, 0, nullptr, nullptr);
    return;
  }
  sqlite3_progress_handler(db_, kWorkUnit, [](void* work) {
    ++*static_cast<uint64_t*>(work);
    return 0;
  }, &work_);
}

Db::~Db() {
  pool_->closed = true;
  for (auto& [sql, idle] : pool_->idle)
    for (auto* s : idle) sqlite3_finalize(s);
  sqlite3_close_v2(db_);
}

Status Db::exec(std::string_view sql) {
  char* err = nullptr;
  std::string s(sql);
  if (sqlite3_exec(db_, s.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    Error e = sqlite_error(db_, "sqlite exec", err ? err : "unknown error");
    sqlite3_free(err);
    if (out_of_space(sqlite3_extended_errcode(db_))) pool_->set_full(e.detail);
    return e;
  }
  // A COMMIT that went through: writes work again (not a ROLLBACK, which also ends in autocommit).
  if (pool_->has_full && sqlite3_get_autocommit(db_) && s.starts_with("COMMIT")) pool_->clear_full();
  return {};
}

Status Db::control(std::string_view sql) {
  auto st = prepare(sql);
  if (!st) return st.error();
  if (auto s = st->run(); !s) return s;  // a write that found no space set `full` in step()
  // A COMMIT that went through: writes work again.
  if (pool_->has_full && sql == "COMMIT" && sqlite3_get_autocommit(db_)) pool_->clear_full();
  return {};
}

Result<Stmt> Db::prepare(std::string_view sql) {
  auto& idle = pool_->idle;
  auto it = idle.find(sql);
  if (it == idle.end() && idle.size() < kMaxSqlTexts) it = idle.emplace(sql, std::vector<sqlite3_stmt*>{}).first;
  std::vector<sqlite3_stmt*>* home = it == idle.end() ? nullptr : &it->second;
  if (home && !home->empty()) {
    sqlite3_stmt* s = home->back();
    home->pop_back();
    return Stmt(db_, s, pool_, home);
  }
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), home ? SQLITE_PREPARE_PERSISTENT : 0, &s,
                         nullptr) != SQLITE_OK)
    return sqlite_error(db_, "sqlite prepare");
  return Stmt(db_, s, pool_, home);
}

Result<int> Db::schema_version() {
  auto st = prepare("PRAGMA user_version");
  if (!st) return st.error();
  auto row = st->step();
  if (!row) return row.error();
  return static_cast<int>(st->int64(0));
}

Result<int> Db::migrate(std::span<const EmbeddedFile> migrations) {
  auto current = schema_version();
  if (!current) return current.error();
  int version = *current;
  int latest = 0;
  for (const auto& m : migrations) {
    auto number = migration_number(m);
    if (!number) return number.error();
    int n = *number;
    latest = std::max(latest, n);
    if (n <= version) continue;
    Transaction tx(*this);
    if (!tx.begun()) return tx.begun().error();
    if (auto s = exec(m.data); !s)
      return make_error(s.code(), "migration " + std::string(m.name) + ": " + s.error().detail);
    if (auto s = exec("PRAGMA user_version = " + std::to_string(n)); !s) return s.error();
    if (auto s = tx.commit(); !s) return s.error();
    version = n;
  }
  if (version > latest)
    return make_error(Code::invalid_argument, "database schema version " + std::to_string(version) +
                                                  " is newer than this tsumd knows (" + std::to_string(latest) + ")");
  return version;
}

Transaction::Transaction(Db& db)
    : db_(db), nested_(db.in_transaction()), begun_(db.control(nested_ ? "SAVEPOINT tx" : "BEGIN IMMEDIATE")) {}

Transaction::~Transaction() {
  if (!begun_ || done_) return;
  if (!nested_) {
    (void)db_.control("ROLLBACK");
  } else if (db_.control("ROLLBACK TO tx")) {
    (void)db_.control("RELEASE tx");
  }
}

Status Transaction::commit() {
  auto s = db_.control(nested_ ? "RELEASE tx" : "COMMIT");
  if (s) done_ = true;
  return s;
}

}  // namespace tsum::daemon
