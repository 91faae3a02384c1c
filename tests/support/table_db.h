// A database file in a temporary directory with one table t, for tests of how writes reach it; other connections
// open `path` to see what is committed.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "daemon/store/db.h"
#include "support/temp_dir.h"

namespace tsum::testing {

struct TableDb {
  TempDir dir;
  std::string path = dir.file("t.db");
  std::unique_ptr<daemon::Db> db;
  explicit TableDb(const char* schema = "CREATE TABLE t (x INTEGER UNIQUE)") {
    auto opened = daemon::Db::open(path);
    REQUIRE(opened.ok());
    db = std::move(*opened);
    REQUIRE(db->exec(schema).ok());
  }
};

}  // namespace tsum::testing
