// Schedules on a FakeClock: due firings, missed ones (skip or catch up once), a due time firing once, and bodies
// that are refused.
#include <doctest/doctest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "billing/prices/catalog.h"
#include "daemon/fixture.h"
#include "daemon/schedules/scheduler.h"
#include "providers/local/local_provider.h"

using namespace tsum;
using namespace tsum::daemon;
using nlohmann::json;

namespace {

// resnet50 reads no data set, so the scheduler's submission needs none registered.
const json kExperiment = json::parse(R"({"name":"nightly","workload":{"model":"resnet50","limit":100},"repetitions":1,
    "configs":[{"provider":"local","instance_type":"local-1c"}]})");

struct SchedulerFixture : testing::DaemonFixture {
  boost::asio::io_context io;
  ProviderRegistry providers;
  BlobStore blobs{dir.file("blobs")};
  Datasets datasets{*db, blobs, clock};
  int notified = 0;
  Scheduler scheduler{io, *db, store, providers, datasets, clock, [this] { ++notified; }};

  SchedulerFixture() {
    clock.set(1'700'000'000);  // 2023-11-14T22:13:20Z
    auto cat = billing::parse_catalog(find_embedded(billing::embedded_catalogs(), "local.json"));
    REQUIRE(cat.ok());
    providers.add(std::make_unique<providers::LocalProvider>(
        providers::LocalOptions{.state_dir = dir.file("state"), .catalog = *cat, .cpus = {}}));
  }
  void tick() {
    boost::asio::co_spawn(io, scheduler.tick(), boost::asio::detached);
    io.run();
    io.restart();
  }
  int64_t create(const std::string& missed = "skip", const std::string& cron = "0 * * * *") {
    auto spec = parse_schedule({{"cron", cron}, {"experiment", kExperiment}, {"missed", missed}, {"name", "hourly"}});
    REQUIRE(spec.ok());
    auto id = scheduler.create(*spec);
    REQUIRE(id.ok());
    return *id;
  }
  int scheduled_experiments() {
    auto st = db->prepare("SELECT COUNT(*) FROM experiments WHERE schedule_id IS NOT NULL");
    REQUIRE(*st->step());
    return static_cast<int>(st->int64(0));
  }
};

}  // namespace

TEST_CASE("a schedule fires at its due time, once, and moves to the next") {
  SchedulerFixture f;
  int64_t id = f.create();
  auto s = *f.scheduler.get(id);
  CHECK(s["next_fire_at"] == 1'700'002'800.0);  // 23:00Z
  CHECK(s["next_fire_local"] == "2023-11-14T23:00:00+00:00");

  f.tick();  // not due yet
  CHECK(f.scheduled_experiments() == 0);
  f.clock.set(1'700'002'805);
  f.tick();
  f.tick();  // the same due time never fires twice
  CHECK(f.scheduled_experiments() == 1);
  CHECK(f.notified == 1);
  s = *f.scheduler.get(id);
  CHECK(s["next_fire_at"] == 1'700'006'400.0);
  REQUIRE(s["firings"].size() == 1);
  CHECK(s["firings"][0]["outcome"] == "fired");
  CHECK(s["firings"][0]["due_at"] == 1'700'002'800.0);
  auto exp = f.store.experiment(s["firings"][0]["experiment_id"].get<int64_t>());
  REQUIRE(exp.ok());
  CHECK(exp->name == "hourly @ 2023-11-14T23:00:00+00:00");
  CHECK(f.store.runs_of(exp->id)->size() == 1);
}

TEST_CASE("missed firings: skip records them; catch_up fires once however many were missed") {
  SchedulerFixture f;
  int64_t skip = f.create("skip");
  int64_t catch_up = f.create("catch_up");
  f.clock.set(1'700'000'000 + 5 * 3600);  // the daemon was down for five due times
  f.tick();
  auto s = *f.scheduler.get(skip);
  REQUIRE(s["firings"].size() == 1);
  CHECK(s["firings"][0]["outcome"] == "skipped");
  CHECK(s["firings"][0]["experiment_id"].is_null());
  auto c = *f.scheduler.get(catch_up);
  REQUIRE(c["firings"].size() == 1);
  CHECK(c["firings"][0]["outcome"] == "fired");
  CHECK(c["firings"][0]["detail"].get<std::string>().find("caught up") != std::string::npos);
  CHECK(f.scheduled_experiments() == 1);
  // Both move to the first due time after now, not to the next missed one.
  CHECK(s["next_fire_at"].get<double>() > f.clock.now_s());
  CHECK(c["next_fire_at"] == s["next_fire_at"]);
  f.tick();
  CHECK(f.scheduled_experiments() == 1);
}

TEST_CASE("a firing the providers refuse is recorded as failed and the schedule goes on") {
  SchedulerFixture f;
  json exp = kExperiment;
  exp["configs"][0]["instance_type"] = "local-64c";  // more cores than this host has
  auto spec = parse_schedule({{"cron", "0 * * * *"}, {"experiment", exp}});
  REQUIRE(spec.ok());
  int64_t id = *f.scheduler.create(*spec);
  f.clock.set(1'700'002'801);
  f.tick();
  auto s = *f.scheduler.get(id);
  REQUIRE(s["firings"].size() == 1);
  CHECK(s["firings"][0]["outcome"] == "failed");
  CHECK(s["firings"][0]["detail"].get<std::string>().find("local-64c") != std::string::npos);
  CHECK(s["next_fire_at"] == 1'700'006'400.0);
}

TEST_CASE("disabled, updated and deleted schedules") {
  SchedulerFixture f;
  int64_t id = f.create();
  auto spec = *parse_schedule({{"cron", "30 * * * *"}, {"experiment", kExperiment}, {"enabled", false}});
  REQUIRE(f.scheduler.update(id, spec).ok());
  CHECK((*f.scheduler.get(id))["next_fire_at"] == 1'700'001'000.0);  // 22:30Z
  f.clock.set(1'700'001'001);
  f.tick();
  CHECK(f.scheduled_experiments() == 0);  // disabled
  auto next = *f.scheduler.next(id, 3);
  REQUIRE(next.size() == 3);
  CHECK(next[0]["local"] == "2023-11-14T23:30:00+00:00");
  CHECK(next[2]["local"] == "2023-11-15T01:30:00+00:00");
  REQUIRE(f.scheduler.remove(id).ok());
  CHECK(f.scheduler.get(id).error().code == Code::not_found);
  CHECK(f.scheduler.list()->empty());
  CHECK(f.scheduler.remove(id).code() == Code::not_found);
}

TEST_CASE("schedule bodies are validated: fields, cron, zone, experiment") {
  auto err = [](const json& body) {
    auto s = parse_schedule(body);
    REQUIRE_FALSE(s.ok());
    return s.error().detail;
  };
  CHECK(err(json::array()) == "the body must be a JSON object");
  CHECK(err({{"cron", "* * * * *"}, {"experiment", kExperiment}, {"colour", 1}}) == "unknown field 'colour'");
  CHECK(err({{"experiment", kExperiment}}) == "'cron' must be a string, e.g. \"0 2 * * *\"");
  CHECK(err({{"cron", "61 * * * *"}, {"experiment", kExperiment}}) == "'cron': minute: 61 is outside 0-59");
  CHECK(err({{"cron", "* * * * *"}, {"timezone", "Mars/Base"}, {"experiment", kExperiment}}) ==
        "'cron': unknown time zone 'Mars/Base'");
  CHECK(err({{"cron", "* * * * *"}}) == "missing field 'experiment'");
  CHECK(err({{"cron", "* * * * *"}, {"experiment", {{"configs", json::array()}}}}).find("'experiment': ") == 0);
  CHECK(err({{"cron", "* * * * *"}, {"experiment", kExperiment}, {"missed", "later"}}) ==
        "'missed' must be \"skip\" or \"catch_up\"");
  CHECK(err({{"cron", "* * * * *"}, {"experiment", kExperiment}, {"budget", -1}}) ==
        "'budget' must be a number above 0 and at most 1e9");
  CHECK(err({{"cron", "* * * * *"}, {"experiment", kExperiment}, {"budget", 1e10}}) ==
        "'budget' must be a number above 0 and at most 1e9");
}

TEST_CASE("a schedule with the longest name fires: its experiment's name is shortened to fit, never refused") {
  SchedulerFixture f;
  auto spec = parse_schedule({{"cron", "0 * * * *"}, {"experiment", kExperiment}, {"name", std::string(200, 'n')}});
  REQUIRE(spec.ok());
  auto id = f.scheduler.create(*spec);
  REQUIRE(id.ok());
  f.clock.set(1'700'002'805);
  f.tick();
  auto s = *f.scheduler.get(*id);
  REQUIRE(s["firings"].size() == 1);
  CHECK(s["firings"][0]["outcome"] == "fired");
  auto exp = f.store.experiment(s["firings"][0]["experiment_id"].get<int64_t>());
  REQUIRE(exp.ok());
  CHECK(exp->name.size() == 200);
  CHECK(exp->name.ends_with(" @ 2023-11-14T23:00:00+00:00"));
}

TEST_CASE("a schedule's firings page by due time, each once, either way; the schedule shows its last 20") {
  SchedulerFixture f;
  const int64_t id = f.create();
  for (int i = 0; i < 25; ++i) {
    auto ins = f.db->prepare("INSERT INTO schedule_firings (schedule_id, due_at, fired_at, outcome, detail) "
                             "VALUES (?, ?, ?, 'skipped', 'missed')");
    REQUIRE(ins.ok());
    REQUIRE(ins->bind(id, 1'600'000'000.0 + 3600.0 * i, 1'700'000'000.0).run().ok());
  }
  for (bool descending : {false, true}) {
    CAPTURE(descending);
    std::vector<double> seen;
    PageRequest page{.limit = 10, .descending = descending};
    for (int pages = 0; pages < 5; ++pages) {
      auto p = f.scheduler.firings(id, page);
      REQUIRE(p.ok());
      CHECK(p->total == 25);
      for (const auto& firing : p->rows) seen.push_back(firing["due_at"].get<double>());
      if (!p->next_after) break;
      page.after = p->next_after;
    }
    REQUIRE(seen.size() == 25);
    for (size_t i = 1; i < seen.size(); ++i) CHECK((descending ? seen[i] < seen[i - 1] : seen[i] > seen[i - 1]));
  }
  auto s = f.scheduler.get(id);
  REQUIRE(s.ok());
  REQUIRE((*s)["firings"].size() == 20);
  CHECK((*s)["firings"][0]["due_at"] == 1'600'000'000.0 + 3600.0 * 24);  // the newest first
  auto all = f.scheduler.list();
  REQUIRE(all.ok());
  REQUIRE(all->size() == 1);
  CHECK_FALSE((*all)[0].contains("firings"));
  CHECK(f.scheduler.firings(id + 1, {}).code() == Code::not_found);
}
