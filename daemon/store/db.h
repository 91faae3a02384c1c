// A thin owner of one SQLite connection: WAL mode, foreign keys on, a busy timeout, prepared statements
// with typed binds, and RAII transactions. Errors come back as values; nothing here throws.
//
// Prepared statements are kept: a Stmt going out of scope is reset (ending its read of the database, as
// finalizing would) and parked by its SQL text, and the next prepare() of that text takes it back instead of
// compiling the SQL again (compiling was a quarter of a GET /v1/runs/{id}). At most kIdlePerSql statements per
// text and kMaxSqlTexts texts are kept; beyond, statements are finalized as before.
//
// Not thread-safe: the daemon uses one connection from its event loop's thread (the network thread only reads
// storage_problem(), which is safe from any thread).
#pragma once

#include <sqlite3.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "common/embedded.h"
#include "common/result.h"

namespace tsum::daemon {

using SqlValue = std::variant<std::nullptr_t, int64_t, double, std::string>;

// Where a connection's idle prepared statements wait, by SQL text. Shared by the Db and its Stmts, so a Stmt
// that outlives its Db finalizes instead of parking.
struct StmtPool {
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::vector<sqlite3_stmt*>, Hash, std::equal_to<>> idle;  // nodes never erased
  bool closed = false;

  // Why the last write failed for want of space; empty once a write succeeds again. Set and cleared on the
  // connection's thread; problem() may be read from any (GET /healthz runs on the network thread).
  void set_full(std::string why) {
    std::lock_guard lock(full_mutex);
    full = std::move(why);
    has_full = true;
  }
  void clear_full() {
    if (!has_full) return;
    std::lock_guard lock(full_mutex);
    full.clear();
    has_full = false;
  }
  std::string problem() const {
    if (!has_full) return {};
    std::lock_guard lock(full_mutex);
    return full;
  }
  std::atomic<bool> has_full{false};

 private:
  mutable std::mutex full_mutex;
  std::string full;
};

class Stmt {
 public:
  // `home`: the idle list of its SQL text to park in when done (nullptr: finalize).
  Stmt(sqlite3* db, sqlite3_stmt* s, std::shared_ptr<StmtPool> pool = nullptr,
       std::vector<sqlite3_stmt*>* home = nullptr)
      : db_(db), s_(s), pool_(std::move(pool)), home_(home) {}
  Stmt(Stmt&& o) noexcept : db_(o.db_), s_(std::exchange(o.s_, nullptr)), pool_(std::move(o.pool_)), home_(o.home_) {}
  Stmt& operator=(Stmt&& o) noexcept {
    if (this != &o) {
      release();
      db_ = o.db_, s_ = std::exchange(o.s_, nullptr), pool_ = std::move(o.pool_), home_ = o.home_;
    }
    return *this;
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt() { release(); }

  // Binds parameters 1..N in order. int, int64_t, double, string-like, nullptr and std::optional work.
  template <class... Args>
  Stmt& bind(const Args&... args) {
    int i = 0;
    (bind_one(++i, args), ...);
    return *this;
  }
  // Binds parameters 1..N from a list built at run time (a WHERE clause's arguments).
  Stmt& bind_all(const std::vector<SqlValue>& args) {
    int i = 0;
    for (const auto& a : args) std::visit([&](const auto& v) { bind_one(++i, v); }, a);
    return *this;
  }
  // Binds one parameter at a 1-based index.
  template <class T>
  Stmt& bind_at(int i, const T& v) {
    bind_one(i, v);
    return *this;
  }
  // Steps once. true: a row is ready to read; false: done.
  Result<bool> step();
  // Runs to completion, ignoring rows.
  Status run();
  // Runs to completion, collecting every row's first column as an integer (a list of ids).
  Result<std::vector<int64_t>> int64s();

  bool is_null(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }
  int64_t int64(int col) const { return sqlite3_column_int64(s_, col); }
  double real(int col) const { return sqlite3_column_double(s_, col); }
  std::string text(int col) const;
  std::optional<double> opt_real(int col) const {
    return is_null(col) ? std::nullopt : std::optional<double>(real(col));
  }
  std::optional<int64_t> opt_int64(int col) const {
    return is_null(col) ? std::nullopt : std::optional<int64_t>(int64(col));
  }

 private:
  void bind_one(int i, std::nullptr_t) { sqlite3_bind_null(s_, i); }
  void bind_one(int i, int v) { sqlite3_bind_int64(s_, i, v); }
  void bind_one(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
  void bind_one(int i, double v) { sqlite3_bind_double(s_, i, v); }
  void bind_one(int i, std::string_view v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void bind_one(int i, const std::string& v) { bind_one(i, std::string_view(v)); }
  void bind_one(int i, const char* v) { bind_one(i, std::string_view(v)); }
  template <class T>
  void bind_one(int i, const std::optional<T>& v) {
    if (v) bind_one(i, *v); else bind_one(i, nullptr);
  }

  void release();

  sqlite3* db_;
  sqlite3_stmt* s_;
  std::shared_ptr<StmtPool> pool_;
  std::vector<sqlite3_stmt*>* home_;
};

class Db {
 public:
  // Opens (creating if needed) the database at path, in WAL mode with foreign keys enforced.
  static Result<std::unique_ptr<Db>> open(const std::string& path);
  // Opens an existing database for reading only (SQLITE_OPEN_READONLY and PRAGMA query_only): nothing is
  // created, migrated or written, not even the journal mode. SQLite may still add the -wal and -shm files
  // beside a WAL database, as any reader does; the database file itself is left as it is.
  static Result<std::unique_ptr<Db>> open_read_only(const std::string& path);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  Status exec(std::string_view sql);
  // One transaction-control statement (BEGIN IMMEDIATE, COMMIT, ROLLBACK, SAVEPOINT tx, RELEASE tx, ROLLBACK TO
  // tx) from the statement pool: exec() compiled them anew each time, 4% of an agent's event (perf).
  Status control(std::string_view sql);
  Result<Stmt> prepare(std::string_view sql);
  int64_t last_insert_id() const { return sqlite3_last_insert_rowid(db_); }
  int changes() const { return sqlite3_changes(db_); }
  bool in_transaction() const { return sqlite3_get_autocommit(db_) == 0; }

  // Applies, in order and each in its own transaction, every migration whose NNNN prefix is above the
  // database's user_version. Returns the schema version now in force. A database newer than this binary
  // is refused with failed_precondition-like invalid_argument, never downgraded.
  Result<int> migrate(std::span<const EmbeddedFile> migrations);
  Result<int> schema_version();

  // Empty while writes succeed. After a write failed for want of space (SQLITE_FULL and the like): why, until a
  // write succeeds again. /healthz reports it; reads go on meanwhile. Safe to call from any thread.
  std::string storage_problem() const { return pool_->problem(); }

  // Counts the work SQLite does on this connection while on: one unit per kWorkUnit virtual-machine instructions
  // (a progress handler). Tests check with it that a request's reads do not grow with the database.
  static constexpr int kWorkUnit = 64;
  void count_work(bool on);
  uint64_t work() const { return work_; }

 private:
  explicit Db(sqlite3* db) : db_(db) {}
  sqlite3* db_;
  uint64_t work_ = 0;
  std::shared_ptr<StmtPool> pool_ = std::make_shared<StmtPool>();
};

// BEGIN IMMEDIATE on construction (a SAVEPOINT when already inside a transaction, so transactions nest);
// rolled back on destruction unless commit() succeeded.
// The highest NNNN prefix among `migrations`: the schema version a database has after migrate().
Result<int> latest_schema_version(std::span<const EmbeddedFile> migrations);

class Transaction {
 public:
  explicit Transaction(Db& db);
  ~Transaction();
  Status begun() const { return begun_; }
  Status commit();

 private:
  Db& db_;
  bool nested_;
  Status begun_;
  bool done_ = false;
};

}  // namespace tsum::daemon
