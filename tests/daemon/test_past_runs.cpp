// read_past_runs: a database's done runs with all 8 phases as trace rows, read without touching the file.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <fstream>

#include "billing/prices/catalog.h"
#include "daemon/fixture.h"
#include "daemon/planning/past_runs.h"
#include "providers/provider.h"

using namespace tsum;
using namespace tsum::daemon;
using tsum::testing::create_experiment;
using tsum::testing::open_migrated;
using tsum::testing::TempDir;

namespace {

// Phase i of a run lasts base + i seconds (startup and poweroff on the daemon's clock).
void record_phases(Ledger& ledger, int64_t run, double base, bool with_poweroff = true) {
  double t = 1000;
  for (size_t i = 0; i < kPhaseNames.size(); ++i) {
    auto phase = static_cast<Phase>(i);
    if (phase == Phase::poweroff && !with_poweroff) break;
    auto clock = is_agent_phase(phase) ? ClockDomain::agent : ClockDomain::daemon;
    REQUIRE(ledger.record_mark(run, phase, Mark::begin, t, clock).ok());
    t += base + static_cast<double>(i);
    REQUIRE(ledger.record_mark(run, phase, Mark::end, t, clock).ok());
  }
}

void finish(Ledger& ledger, int64_t run, RunStatus to) {
  if (to == RunStatus::done) REQUIRE(ledger.advance(run, RunStatus::terminating, "").ok());
  REQUIRE(ledger.advance(run, to, "").ok());
}

// Experiment 1: local-1c and local-2c, 2 repetitions (runs 1..4 in repetition-major order: 1 = local-1c rep 1,
// 2 = local-2c rep 1, 3 = local-1c rep 2, 4 = local-2c rep 2). Experiment 2: aws c6i.large and g4dn.xlarge
// (runs 5, 6). Experiment 3: one queued run (7). The connection is closed on return, so the file is complete.
void build_db(const std::string& path) {
  auto db = open_migrated(path);
  FakeClock clock;
  Store store(*db, clock);
  Ledger ledger(*db, clock);
  create_experiment(store, R"({"name":"a","workload":{"epochs":1},"configs":[
      {"provider":"local","instance_type":"local-1c"},{"provider":"local","instance_type":"local-2c"}],
      "repetitions":2})");
  create_experiment(store, R"({"name":"b","workload":{"epochs":1},"configs":[
      {"provider":"aws","instance_type":"c6i.large"},{"provider":"aws","instance_type":"g4dn.xlarge"}],
      "repetitions":1})");
  create_experiment(store, R"({"name":"c","workload":{"epochs":1},"configs":[
      {"provider":"local","instance_type":"local-1c"}],"repetitions":1})");
  record_phases(ledger, 1, 10);
  finish(ledger, 1, RunStatus::done);
  record_phases(ledger, 2, 20, /*with_poweroff=*/false);  // done, but poweroff never ended
  finish(ledger, 2, RunStatus::done);
  record_phases(ledger, 3, 30);
  finish(ledger, 3, RunStatus::failed);
  REQUIRE(ledger.set_instance(4, {{"provider", "trace"}, {"id", "t-4"},
                                  {"data", {{"config", "x/big"}, {"line", 2}, {"cores", 8}, {"gpus", 1}}}})
              .ok());
  record_phases(ledger, 4, 40);
  finish(ledger, 4, RunStatus::done);
  record_phases(ledger, 5, 50);
  finish(ledger, 5, RunStatus::done);
  record_phases(ledger, 6, 60);
  finish(ledger, 6, RunStatus::done);
}

std::vector<billing::Catalog> shipped_catalogs() {
  std::vector<billing::Catalog> out;
  for (const auto& f : billing::embedded_catalogs()) {
    auto c = billing::parse_catalog(f.data);
    REQUIRE(c.ok());
    out.push_back(std::move(*c));
  }
  return out;
}

struct FileState {
  std::string bytes;
  off_t size = 0;
  timespec mtime{};
  bool operator==(const FileState& o) const {
    return bytes == o.bytes && size == o.size && mtime.tv_sec == o.mtime.tv_sec && mtime.tv_nsec == o.mtime.tv_nsec;
  }
};

FileState state_of(const std::string& path) {
  FileState s;
  struct stat st {};
  REQUIRE(stat(path.c_str(), &st) == 0);
  s.size = st.st_size;
  s.mtime = st.st_mtim;
  std::ifstream in(path, std::ios::binary);
  s.bytes.assign(std::istreambuf_iterator<char>(in), {});
  return s;
}

}  // namespace

TEST_CASE("past runs: done runs with all 8 phases become trace rows; failed, unfinished and incomplete ones do not") {
  TempDir dir;
  build_db(dir.file("a.db"));
  auto catalogs = shipped_catalogs();
  auto rows = read_past_runs(dir.file("a.db"), {}, catalogs);
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 4);  // runs 1, 4, 5, 6
  std::vector<int> lines;
  for (const auto& r : *rows) lines.push_back(r.line);
  CHECK(lines == std::vector<int>{1, 4, 5, 6});

  const auto& first = (*rows)[0];
  CHECK(first.run.cfg.config == "local/local-1c");
  CHECK(first.run.cfg.provider == "local");
  CHECK(first.run.cfg.instance_type == "local-1c");
  CHECK(first.run.cfg.cores == 1);  // local-<N>c
  CHECK(first.price_per_hour == doctest::Approx(0.085));
  CHECK(first.currency == "USD");
  for (size_t i = 0; i < 8; ++i) CHECK(first.run.phases[i] == doctest::Approx(10.0 + static_cast<double>(i)));

  const auto& handle = (*rows)[1];  // the instance handle names its machine: it wins over local-2c
  CHECK(handle.run.cfg.cores == 8);
  CHECK(handle.run.cfg.gpus == 1);
  CHECK(handle.run.phases[billing::kLearn] == doctest::Approx(44.0));

  const auto& cpu = (*rows)[2];  // no handle, not local: the aws catalog's offer
  CHECK(cpu.run.cfg.config == "aws/c6i.large");
  CHECK(cpu.run.cfg.cores == 2);
  CHECK(cpu.run.cfg.gpus == 0);
  const auto& gpu = (*rows)[3];
  CHECK(gpu.run.cfg.cores == 4);
  CHECK(gpu.run.cfg.gpus == 1);
  CHECK(gpu.run.cfg.gpu_type == "T4");

  auto without_catalogs = read_past_runs(dir.file("a.db"));
  REQUIRE(without_catalogs.ok());
  CHECK((*without_catalogs)[2].run.cfg.cores == 0);  // nothing else says what c6i.large is
}

TEST_CASE("past runs: the experiment filter keeps only the named experiments; an unknown id is not_found") {
  TempDir dir;
  build_db(dir.file("a.db"));
  auto only_b = read_past_runs(dir.file("a.db"), {2});
  REQUIRE(only_b.ok());
  REQUIRE(only_b->size() == 2);
  CHECK((*only_b)[0].run.cfg.instance_type == "c6i.large");
  CHECK((*only_b)[1].run.cfg.instance_type == "g4dn.xlarge");

  auto both = read_past_runs(dir.file("a.db"), {2, 1, 2});
  REQUIRE(both.ok());
  CHECK(both->size() == 4);

  auto unknown = read_past_runs(dir.file("a.db"), {1, 9});
  CHECK(unknown.code() == Code::not_found);
  CHECK(unknown.error().detail.find("no experiment 9") != std::string::npos);
  CHECK(unknown.error().detail.find("1, 2, 3") != std::string::npos);
}

TEST_CASE("past runs: when no run qualifies, the error counts the runs found and says why each was left out") {
  TempDir dir;
  build_db(dir.file("a.db"));
  auto queued = read_past_runs(dir.file("a.db"), {3});
  CHECK(queued.code() == Code::not_found);
  CHECK(queued.error().detail == "1 run in experiment 3, none done with all 8 phases measured: 1 queued");

  // Experiment 1 without its two good runs: a copy where runs 1 and 4 failed instead.
  auto db = open_migrated(dir.file("b.db"));
  FakeClock clock;
  Store store(*db, clock);
  Ledger ledger(*db, clock);
  create_experiment(store, R"({"name":"a","workload":{"epochs":1},"configs":[
      {"provider":"local","instance_type":"local-1c"},{"provider":"local","instance_type":"local-2c"}],
      "repetitions":1})");
  record_phases(ledger, 1, 10, /*with_poweroff=*/false);
  finish(ledger, 1, RunStatus::done);
  finish(ledger, 2, RunStatus::failed);
  db.reset();
  auto none = read_past_runs(dir.file("b.db"));
  CHECK(none.code() == Code::not_found);
  CHECK(none.error().detail ==
        "2 runs in experiment 1, none done with all 8 phases measured: 1 done with a phase unmeasured, 1 failed");

  auto empty_db = open_migrated(dir.file("c.db"));
  empty_db.reset();
  auto nothing = read_past_runs(dir.file("c.db"));
  CHECK(nothing.code() == Code::not_found);
  CHECK(nothing.error().detail == "the database has no experiments; nothing to replay");
}

TEST_CASE("past runs: the database file is opened read-only: its bytes, size and mtime stay the same") {
  TempDir dir;
  build_db(dir.file("a.db"));
  auto before = state_of(dir.file("a.db"));
  REQUIRE(read_past_runs(dir.file("a.db"), {1, 2}).ok());
  REQUIRE(read_past_runs(dir.file("a.db"), {3}).code() == Code::not_found);
  CHECK(state_of(dir.file("a.db")) == before);

  // An older schema is read as it is, never migrated: a version-4 database (no searches table yet) stays so.
  build_db(dir.file("v4.db"));
  {
    auto db = Db::open(dir.file("v4.db"));
    REQUIRE(db.ok());
    REQUIRE((*db)->exec("DROP TABLE searches; PRAGMA user_version = 4").ok());
  }
  before = state_of(dir.file("v4.db"));
  auto old = read_past_runs(dir.file("v4.db"));
  REQUIRE(old.ok());
  CHECK(old->size() == 4);
  CHECK(state_of(dir.file("v4.db")) == before);
}

TEST_CASE("past runs: a missing file, a non-database, a foreign or unmigrated SQLite file and a newer schema are "
          "refused, and none of them is created or changed") {
  TempDir dir;
  auto missing = read_past_runs(dir.file("missing.db"));
  CHECK(missing.code() == Code::not_found);
  CHECK(missing.error().detail == "no such file");
  CHECK_FALSE(std::filesystem::exists(dir.file("missing.db")));

  std::ofstream(dir.file("text.db")) << "config,provider\nthis is a CSV, not a database\n";
  auto before = state_of(dir.file("text.db"));
  auto text = read_past_runs(dir.file("text.db"));
  CHECK(text.code() == Code::invalid_argument);
  CHECK(text.error().detail.find("not a tsum database") != std::string::npos);
  CHECK(state_of(dir.file("text.db")) == before);

  {
    auto foreign = Db::open(dir.file("foreign.db"));
    REQUIRE(foreign.ok());
    REQUIRE((*foreign)->exec("CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT)").ok());
  }
  before = state_of(dir.file("foreign.db"));
  auto foreign = read_past_runs(dir.file("foreign.db"));
  CHECK(foreign.code() == Code::invalid_argument);
  CHECK(foreign.error().detail == "not a tsum database (no schema version)");
  CHECK(state_of(dir.file("foreign.db")) == before);

  build_db(dir.file("newer.db"));
  auto latest = latest_schema_version(sql::migrations());
  REQUIRE(latest.ok());
  {
    auto db = Db::open(dir.file("newer.db"));
    REQUIRE(db.ok());
    REQUIRE((*db)->exec("PRAGMA user_version = " + std::to_string(*latest + 1)).ok());
  }
  auto newer = read_past_runs(dir.file("newer.db"));
  CHECK(newer.code() == Code::invalid_argument);
  CHECK(newer.error().detail.find("newer than this tsumd knows") != std::string::npos);
}

TEST_CASE("past runs: the machine a run stored from its offer describes it, nodes included") {
  TempDir dir;
  {
    auto db = open_migrated(dir.file("m.db"));
    FakeClock clock;
    Store store(*db, clock);
    Ledger ledger(*db, clock);
    auto spec = parse_experiment_spec(R"({"name":"m","workload":{"epochs":1},"configs":[
        {"provider":"aws","instance_type":"c4.large","nodes":4,"dist":"ring"}],"repetitions":1})");
    REQUIRE(spec.ok());
    providers::Offer offer{.provider = "aws", .instance_type = "c4.large", .vcpus = 2, .memory_gib = 3.75,
                           .hourly_price = 0.1, .cpu_model = "Intel Xeon E5-2666 v3"};
    const auto machine = providers::machine_of(offer);
    CHECK(machine == nlohmann::json{{"family", "c4"}, {"vcpus", 2}, {"memory_gib", 3.75},
                                    {"cpu_model", "Intel Xeon E5-2666 v3"}});
    REQUIRE(store.create_experiment(*spec, {{spec->configs[0], 0.1, "USD", machine}}).ok());
    auto run = store.run(1);
    REQUIRE(run.ok());
    CHECK(run->machine == machine);  // stored as the run was created, read back with the row
    record_phases(ledger, 1, 10);
    finish(ledger, 1, RunStatus::done);
  }
  auto rows = read_past_runs(dir.file("m.db"));
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 1);
  const auto& cfg = (*rows)[0].run.cfg;
  CHECK(cfg.config == "aws/c4.large/x4");
  CHECK(cfg.nodes == 4);
  CHECK(cfg.cores == 2);
  CHECK(cfg.cpu_family == "c4");
  CHECK(cfg.memory_gib == 3.75);
  CHECK(cfg.cpu_model == "Intel Xeon E5-2666 v3");
}
