// A migrated database in a temp dir holding one experiment with `configs` queued runs.
#pragma once

#include <doctest/doctest.h>

#include "common/clock.h"
#include "daemon/store/db.h"
#include "daemon/runs/ledger.h"
#include "daemon/store/store.h"
#include "sql/migrations.h"
#include "support/temp_dir.h"

namespace tsum::testing {

inline std::unique_ptr<daemon::Db> open_migrated(const std::string& path) {
  auto db = daemon::Db::open(path);
  REQUIRE(db.ok());
  REQUIRE((*db)->migrate(sql::migrations()).ok());
  return std::move(*db);
}

// The one integer `sql` answers (a count, a sum).
inline int64_t scalar(daemon::Db& db, const std::string& sql) {
  auto st = db.prepare(sql);
  REQUIRE(st.ok());
  auto row = st->step();
  REQUIRE(row.ok());
  REQUIRE(*row);
  return st->int64(0);
}

inline int64_t create_experiment(daemon::Store& store, std::string_view body) {
  auto spec = daemon::parse_experiment_spec(body);
  REQUIRE(spec.ok());
  std::vector<daemon::PricedConfig> priced;
  for (auto& c : spec->configs) priced.push_back({c, 0.085, "USD"});
  auto id = store.create_experiment(*spec, priced);
  REQUIRE(id.ok());
  return *id;
}

struct DaemonFixture {
  TempDir dir;
  FakeClock clock;
  std::unique_ptr<daemon::Db> db = open_migrated(dir.file("t.db"));
  daemon::Store store{*db, clock};
  daemon::Ledger ledger{*db, clock};
  int64_t experiment_id = create_experiment(
      store, R"({"name":"t","workload":{"epochs":1,"limit":100},"configs":[
                 {"provider":"local","instance_type":"local-1c"},{"provider":"local","instance_type":"local-2c"}],
                 "repetitions":1})");
};

}  // namespace tsum::testing
