#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "daemon/db.h"
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
