#include <doctest/doctest.h>

#include "daemon/store/db.h"
#include "sql/migrations.h"
#include "support/temp_dir.h"

using namespace tsum;
using namespace tsum::daemon;

TEST_CASE("migrations apply to an empty database and bring it to the latest version, in WAL mode") {
  testing::TempDir dir;
  auto db = Db::open(dir.file("t.db"));
  REQUIRE(db.ok());
  CHECK(*(*db)->schema_version() == 0);
  auto v = (*db)->migrate(sql::migrations());
  REQUIRE(v.ok());
  CHECK(*v >= 1);
  auto mode = (*db)->prepare("PRAGMA journal_mode");
  REQUIRE(mode.ok());
  REQUIRE(*mode->step());
  CHECK(mode->text(0) == "wal");
  auto fk = (*db)->prepare("PRAGMA foreign_keys");
  REQUIRE(*fk->step());
  CHECK(fk->int64(0) == 1);
}

TEST_CASE("migrating an existing database keeps its data and applies nothing twice") {
  testing::TempDir dir;
  int version = 0;
  {
    auto db = Db::open(dir.file("t.db"));
    REQUIRE(db.ok());
    version = *(*db)->migrate(sql::migrations());
    REQUIRE((*db)->exec("INSERT INTO experiments (name, spec, created_at) VALUES ('kept', '{}', 1)").ok());
  }
  auto db = Db::open(dir.file("t.db"));
  REQUIRE(db.ok());
  auto v = (*db)->migrate(sql::migrations());
  REQUIRE(v.ok());
  CHECK(*v == version);
  auto st = (*db)->prepare("SELECT name FROM experiments");
  REQUIRE(*st->step());
  CHECK(st->text(0) == "kept");
}

TEST_CASE("a later migration applies on top of an existing database, each in its own transaction") {
  testing::TempDir dir;
  auto db = Db::open(dir.file("t.db"));
  REQUIRE((*db)->migrate(sql::migrations()).ok());
  std::vector<EmbeddedFile> more(sql::migrations().begin(), sql::migrations().end());
  more.push_back({"9000_extra.sql", "CREATE TABLE extra (x INTEGER);"});
  auto v = (*db)->migrate(more);
  REQUIRE(v.ok());
  CHECK(*v == 9000);
  CHECK((*db)->exec("INSERT INTO extra VALUES (1)").ok());

  // A broken migration leaves the version and the schema as they were.
  more.push_back({"9001_broken.sql", "CREATE TABLE half (x INTEGER); THIS IS NOT SQL;"});
  auto bad = (*db)->migrate(more);
  CHECK_FALSE(bad.ok());
  CHECK(*(*db)->schema_version() == 9000);
  CHECK_FALSE((*db)->exec("SELECT * FROM half").ok());
}

TEST_CASE("a database newer than the binary is refused") {
  testing::TempDir dir;
  auto db = Db::open(dir.file("t.db"));
  REQUIRE((*db)->exec("PRAGMA user_version = 99999").ok());
  auto v = (*db)->migrate(sql::migrations());
  REQUIRE_FALSE(v.ok());
  CHECK(v.error().detail.find("newer") != std::string::npos);
}

TEST_CASE("an unopenable path is an error value") {
  auto db = Db::open("/nonexistent-dir/x/y.db");
  CHECK_FALSE(db.ok());
}

TEST_CASE("a kept statement comes back reset: fresh rows, no old binds, no read left open") {
  testing::TempDir dir;
  auto db = Db::open(dir.file("t.db"));
  REQUIRE(db.ok());
  Db& d = **db;
  REQUIRE(d.exec("CREATE TABLE t (k INTEGER, v TEXT); INSERT INTO t VALUES (1, 'a'), (1, 'b'), (2, 'c');").ok());
  const char* sql = "SELECT v FROM t WHERE k = ? ORDER BY v";
  {
    auto st = d.prepare(sql);
    REQUIRE(st.ok());
    st->bind(1);
    REQUIRE(*st->step());
    CHECK(st->text(0) == "a");  // left mid-iteration: parked, its read open until reset
  }
  // The same text again: from the first row, with the new bind (an old bind would find 'a').
  auto again = d.prepare(sql);
  REQUIRE(again.ok());
  again->bind(2);
  REQUIRE(*again->step());
  CHECK(again->text(0) == "c");
  CHECK_FALSE(*again->step());
  // A second live statement of the same text is its own: both iterate independently.
  auto other = d.prepare(sql);
  REQUIRE(other.ok());
  other->bind(1);
  REQUIRE(*other->step());
  CHECK(other->text(0) == "a");
  // Unbound, a kept statement's parameter is NULL again (binds are cleared when parked).
  { auto moved = std::move(*again); }
  auto unbound = d.prepare(sql);
  REQUIRE(unbound.ok());
  CHECK_FALSE(*unbound->step());
}

TEST_CASE("a parked statement holds no read: another connection can checkpoint the whole WAL") {
  testing::TempDir dir;
  auto db = Db::open(dir.file("t.db"));
  REQUIRE(db.ok());
  REQUIRE((*db)->exec("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2);").ok());
  {
    auto st = (*db)->prepare("SELECT x FROM t");
    REQUIRE(*st->step());  // a read transaction is open on this connection now
  }
  auto writer = Db::open(dir.file("t.db"));
  REQUIRE(writer.ok());
  REQUIRE((*writer)->exec("INSERT INTO t VALUES (3)").ok());
  auto cp = (*writer)->prepare("PRAGMA wal_checkpoint(TRUNCATE)");
  REQUIRE(cp.ok());
  REQUIRE(*cp->step());
  CHECK(cp->int64(0) == 0);  // not busy: no reader holds an older snapshot
  // And the parked statement, taken again, sees the new row.
  auto count = (*db)->prepare("SELECT count(*) FROM t");
  REQUIRE(*count->step());
  CHECK(count->int64(0) == 3);
}

TEST_CASE("a kept statement survives a schema change, and one outliving its database is finalized") {
  testing::TempDir dir;
  auto db = Db::open(dir.file("t.db"));
  REQUIRE(db.ok());
  REQUIRE((*db)->exec("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (7);").ok());
  { auto st = (*db)->prepare("SELECT * FROM t"); REQUIRE(*st->step()); }
  REQUIRE((*db)->exec("ALTER TABLE t ADD COLUMN y TEXT DEFAULT 'new'").ok());
  auto st = (*db)->prepare("SELECT * FROM t");  // compiled before the ALTER: SQLite prepares it again
  REQUIRE(st.ok());
  REQUIRE(*st->step());
  CHECK(st->text(1) == "new");
  auto late = (*db)->prepare("SELECT x FROM t");
  REQUIRE(late.ok());
  db->reset();  // the Db goes first; `late` and `st` then finalize themselves instead of parking (clean under
                // valgrind --leak-check=full)
}

TEST_CASE("a write that finds no space is unavailable (retry later), says so, and storage_problem() holds until a "
          "write succeeds again") {
  testing::TempDir dir;
  auto db = Db::open(dir.file("t.db"));
  REQUIRE(db.ok());
  Db& d = **db;
  REQUIRE(d.exec("CREATE TABLE t (v BLOB)").ok());
  REQUIRE(d.exec("INSERT INTO t VALUES (zeroblob(10000))").ok());
  CHECK(d.storage_problem().empty());
  // SQLite's own page limit fails a write with SQLITE_FULL exactly as a full disk does.
  int64_t limit = 0;
  {
    auto pages = d.prepare("PRAGMA page_count");
    REQUIRE(*pages->step());
    limit = pages->int64(0);
  }
  REQUIRE(d.exec("PRAGMA max_page_count = " + std::to_string(limit)).ok());
  Status full;
  {
    Transaction tx(d);
    REQUIRE(tx.begun().ok());
    auto ins = d.prepare("INSERT INTO t VALUES (zeroblob(100000))");
    REQUIRE(ins.ok());
    full = ins->run();
  }
  REQUIRE_FALSE(full.ok());
  CHECK(full.error().code == Code::unavailable);
  CHECK(full.error().detail.find("disk is full") != std::string::npos);
  CHECK(d.storage_problem().find("disk is full") != std::string::npos);
  // Reads go on, and what was committed is all there.
  {
    auto count = d.prepare("SELECT count(*) FROM t");
    REQUIRE(*count->step());
    CHECK(count->int64(0) == 1);
  }
  CHECK(d.storage_problem().find("disk is full") != std::string::npos);  // a read does not clear it
  // Space returns: the same write goes through and the problem is gone.
  REQUIRE(d.exec("PRAGMA max_page_count = 1000000").ok());
  {
    Transaction tx(d);
    auto ins = d.prepare("INSERT INTO t VALUES (zeroblob(100000))");
    REQUIRE(ins->run().ok());
    CHECK_FALSE(d.storage_problem().empty());  // not committed yet
    REQUIRE(tx.commit().ok());
  }
  CHECK(d.storage_problem().empty());
}
