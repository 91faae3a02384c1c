// Retention (daemon/store/retention.h): what a run grew besides its facts goes once it has been finished for long enough,
// and nothing else: a recent run's lines, the phases and costs, a model it saved, a file another row still names.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "daemon/artifacts/blob_store.h"
#include "daemon/fixture.h"
#include "daemon/store/retention.h"
#include "daemon/agent/run_logs.h"

using namespace tsum;
using namespace tsum::daemon;
using tsum::testing::scalar;

namespace {

void exec(Db& db, const std::string& sql) {
  auto st = db.prepare(sql);
  REQUIRE(st.ok());
  REQUIRE(st->run().ok());
}

std::string blob(BlobStore& blobs, testing::TempDir& dir, const std::string& text) {
  const std::string path = dir.file("in");
  std::ofstream(path) << text;
  auto info = blobs.add_copy(path);
  REQUIRE(info.ok());
  return info->sha256;
}

}  // namespace

TEST_CASE("retention lets go of old runs' logs, samples and tokens, and keeps their facts and whatever is recent") {
  testing::DaemonFixture f;  // runs 1 and 2
  BlobStore blobs(f.dir.file("blobs"));
  // Run 1 finished at t=1000, run 2 at t=5000.
  for (auto [id, t] : {std::pair<int64_t, double>{1, 1000}, {2, 5000}}) {
    f.clock.set(t - 100);
    REQUIRE(f.ledger.advance(id, RunStatus::provisioning, "").ok());
    REQUIRE(f.ledger.record_mark(id, Phase::startup, Mark::begin, t - 100, ClockDomain::daemon).ok());
    REQUIRE(f.ledger.record_mark(id, Phase::startup, Mark::end, t - 90, ClockDomain::daemon).ok());
    f.clock.set(t);
    REQUIRE(f.ledger.advance(id, RunStatus::failed, "").ok());
    exec(*f.db, "INSERT INTO run_log_sources VALUES (" + std::to_string(id) + ", 'a1n0', 3)");
    for (int n = 0; n < 3; ++n)
      exec(*f.db, "INSERT INTO run_log_lines (run_id, source, n, time, line) VALUES (" + std::to_string(id) +
                      ", 'a1n0', " + std::to_string(n) + ", 1, 'epoch " + std::to_string(n) + "')");
    exec(*f.db, "INSERT INTO tokens VALUES ('h" + std::to_string(id) + "', 'run', " + std::to_string(id) + ", " +
                    std::to_string(t - 100) + ", " + std::to_string(t) + ")");
  }
  const std::string shared = blob(blobs, f.dir, "cpu,rss\n1,2\n");  // both runs' samples.csv, the same bytes
  const std::string events = blob(blobs, f.dir, "{\"epoch\":1}\n");
  const std::string model = blob(blobs, f.dir, "weights");
  for (const auto& [run, name, sha] : {std::tuple<int, std::string, std::string>{1, "samples.csv", shared},
                                       {1, "events.jsonl", events},
                                       {1, "model.pt", model},
                                       {2, "samples.csv", shared}})
    exec(*f.db, "INSERT INTO run_artifacts VALUES (" + std::to_string(run) + ", '" + name + "', '" + sha + "', 5, 1)");
  const int64_t marks = scalar(*f.db, "SELECT COUNT(*) FROM phase_marks");

  auto gone = let_go(*f.db, &blobs, {}, 3000);  // keep what finished in the last 2,000 s
  REQUIRE(gone.ok());
  CHECK(gone->runs == 1);
  CHECK(gone->lines == 3);
  CHECK(gone->artifacts == 2);
  CHECK(gone->tokens == 1);
  CHECK(scalar(*f.db, "SELECT COUNT(*) FROM run_log_lines WHERE run_id = 1") == 0);
  CHECK(scalar(*f.db, "SELECT COUNT(*) FROM run_log_lines WHERE run_id = 2") == 3);
  RunLogs logs(*f.db, f.clock);
  CHECK(*logs.dropped(1) == 3);  // a reader sees the lines as dropped
  CHECK(scalar(*f.db, "SELECT COUNT(*) FROM run_artifacts WHERE run_id = 1") == 1);  // model.pt
  CHECK(scalar(*f.db, "SELECT COUNT(*) FROM run_artifacts WHERE run_id = 2") == 1);
  CHECK(scalar(*f.db, "SELECT COUNT(*) FROM tokens") == 1);
  CHECK(scalar(*f.db, "SELECT COUNT(*) FROM phase_marks") == marks);
  CHECK(blobs.has(shared));  // run 2 still names it
  CHECK_FALSE(blobs.has(events));
  CHECK(blobs.has(model));
  CHECK(gone->blob_bytes == 12);

  auto again = let_go(*f.db, &blobs, {}, 3000);
  REQUIRE(again.ok());
  CHECK(again->runs == 0);
  CHECK(again->tokens == 0);
  // Later, run 2's turn: the shared file goes with its last row; a file on the keep list would stay.
  again = let_go(*f.db, &blobs, {shared}, 9000);
  REQUIRE(again.ok());
  CHECK(again->runs == 1);
  CHECK(blobs.has(shared));
  again = let_go(*f.db, &blobs, {}, 9000);
  REQUIRE(again.ok());
  CHECK(again->runs == 0);
}

TEST_CASE("retention works in batches, and a live run is never touched") {
  testing::DaemonFixture f;
  for (int i = 0; i < 3; ++i) testing::create_experiment(f.store, R"({"name":"x","workload":{"epochs":1},
      "configs":[{"provider":"local","instance_type":"local-1c"}],"repetitions":5})");  // runs 3-17
  f.clock.set(100);
  for (int64_t id = 1; id <= 17; ++id) {
    if (id != 9) REQUIRE(f.ledger.advance(id, id == 8 ? RunStatus::provisioning : RunStatus::cancelled, "").ok());
    exec(*f.db, "INSERT INTO run_log_lines (run_id, source, n, time, line) VALUES (" + std::to_string(id) +
                    ", 'a1n0', 0, 1, 'x')");
  }
  int64_t runs = 0;
  for (int pass = 0; pass < 10; ++pass) {
    auto gone = let_go(*f.db, nullptr, {}, 1000, 4);
    REQUIRE(gone.ok());
    CHECK(gone->runs <= 4);
    runs += gone->runs;
    if (gone->runs == 0) break;
  }
  CHECK(runs == 15);  // all but the live run 8 and the queued run 9
  CHECK(scalar(*f.db, "SELECT COUNT(*) FROM run_log_lines") == 2);
}
