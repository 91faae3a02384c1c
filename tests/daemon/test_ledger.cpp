#include <doctest/doctest.h>

#include "daemon/fixture.h"

using namespace tsum;
using namespace tsum::daemon;
using tsum::testing::DaemonFixture;

TEST_CASE("creating an experiment queues configs x repetitions runs") {
  DaemonFixture f;
  auto runs = f.store.runs_of(f.experiment_id);
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 2);
  CHECK((*runs)[0].status == RunStatus::queued);
  CHECK((*runs)[0].instance_type == "local-1c");
  CHECK((*runs)[1].instance_type == "local-2c");
}

TEST_CASE("advance moves forward, may skip, and records every transition") {
  DaemonFixture f;
  int64_t run = 1;
  CHECK(f.ledger.advance(run, RunStatus::provisioning, "dispatched").ok());
  CHECK(f.ledger.advance(run, RunStatus::provisioning, "again").ok());  // same status: no-op
  CHECK(f.ledger.advance(run, RunStatus::learning, "skip ahead").ok());
  auto back = f.ledger.advance(run, RunStatus::booting, "backwards");
  CHECK(back.code() == Code::invalid_argument);
  auto early_done = f.ledger.advance(run, RunStatus::done, "");
  CHECK(early_done.code() == Code::invalid_argument);  // done only after terminating
  CHECK(f.ledger.advance(run, RunStatus::terminating, "").ok());
  CHECK(f.ledger.advance(run, RunStatus::done, "").ok());
  CHECK(*f.ledger.status(run) == RunStatus::done);
  // A finished run never changes again.
  CHECK(f.ledger.advance(run, RunStatus::failed, "late").code() == Code::already_exists);
  CHECK(*f.ledger.status(run) == RunStatus::done);

  auto st = f.db->prepare("SELECT from_status, to_status FROM run_transitions WHERE run_id = 1 ORDER BY seq");
  std::vector<std::string> seen;
  while (*st->step()) seen.push_back(st->text(0) + ">" + st->text(1));
  CHECK(seen == std::vector<std::string>{"queued>provisioning", "provisioning>learning", "learning>terminating",
                                         "terminating>done"});
}

TEST_CASE("failed and cancelled are reachable from any unfinished status, with the reason kept") {
  DaemonFixture f;
  CHECK(f.ledger.advance(1, RunStatus::cancelled, "cancelled by user").ok());
  CHECK(f.ledger.advance(2, RunStatus::learning, "").ok());
  CHECK(f.ledger.advance(2, RunStatus::failed, "agent died").ok());
  CHECK(f.store.run(2)->reason == "agent died");
  CHECK(f.ledger.advance(99, RunStatus::failed, "").code() == Code::not_found);
}

TEST_CASE("a phase mark is written once: a replay cannot move it, and the database refuses updates") {
  DaemonFixture f;
  auto first = f.ledger.record_mark(1, Phase::learn, Mark::begin, 100.0, ClockDomain::agent);
  REQUIRE(first.ok());
  CHECK(*first);
  auto replay = f.ledger.record_mark(1, Phase::learn, Mark::begin, 555.0, ClockDomain::agent);
  REQUIRE(replay.ok());
  CHECK_FALSE(*replay);
  CHECK(f.ledger.record_mark(1, Phase::learn, Mark::end, 130.5, ClockDomain::agent).ok());
  auto phases = f.ledger.phases(1);
  REQUIRE(phases.ok());
  CHECK((*phases)[Phase::learn].begin->t == 100.0);
  CHECK((*phases)[Phase::learn].seconds().value() == doctest::Approx(30.5));

  // Even raw SQL cannot rewrite or delete a measured mark.
  CHECK_FALSE(f.db->exec("UPDATE phase_marks SET t = 0 WHERE run_id = 1").ok());
  CHECK_FALSE(f.db->exec("DELETE FROM phase_marks WHERE run_id = 1").ok());
  CHECK_FALSE(f.db->exec("INSERT INTO phase_marks (run_id, phase, mark, t, clock, received_at) "
                         "VALUES (1, 'learn', 'begin', 1, 'agent', 1)").ok());
  CHECK((*f.ledger.phases(1))[Phase::learn].begin->t == 100.0);
}

TEST_CASE("marks on different clocks do not make a duration") {
  DaemonFixture f;
  REQUIRE(f.ledger.record_mark(1, Phase::save, Mark::begin, 10, ClockDomain::agent).ok());
  REQUIRE(f.ledger.record_mark(1, Phase::save, Mark::end, 1e9, ClockDomain::daemon).ok());
  CHECK_FALSE((*f.ledger.phases(1))[Phase::save].seconds().has_value());
}

TEST_CASE("an agent event ends startup on the daemon clock once, records its mark and moves the status") {
  DaemonFixture f;
  REQUIRE(f.ledger.advance(1, RunStatus::booting, "").ok());
  REQUIRE(f.ledger.record_mark(1, Phase::startup, Mark::begin, f.clock.now_s(), ClockDomain::daemon).ok());
  f.clock.advance(12.5);
  AgentEvent ev{Phase::install, AgentEvent::Kind::begin, 1000.0, {}};
  auto out = f.ledger.apply_agent_event(1, ev);
  REQUIRE(out.ok());
  CHECK(out->recorded);
  CHECK(out->first_sign_of_life);
  CHECK(*f.ledger.status(1) == RunStatus::installing);

  f.clock.advance(100);
  auto dup = f.ledger.apply_agent_event(1, ev);  // a retried event
  REQUIRE(dup.ok());
  CHECK_FALSE(dup->recorded);
  CHECK_FALSE(dup->first_sign_of_life);
  auto phases = *f.ledger.phases(1);
  CHECK(phases[Phase::startup].seconds().value() == doctest::Approx(12.5));
  CHECK(phases[Phase::install].begin->t == 1000.0);

  // A late begin of an earlier phase never moves the run backwards.
  REQUIRE(f.ledger.apply_agent_event(1, {Phase::learn, AgentEvent::Kind::begin, 1010.0, {}}).ok());
  REQUIRE(f.ledger.apply_agent_event(1, {Phase::load_data, AgentEvent::Kind::begin, 1001.0, {}}).ok());
  CHECK(*f.ledger.status(1) == RunStatus::learning);
}

TEST_CASE("an end mark's resource stats are stored with it, once") {
  DaemonFixture f;
  REQUIRE(f.ledger.advance(1, RunStatus::booting, "").ok());
  REQUIRE(f.ledger.apply_agent_event(1, {Phase::learn, AgentEvent::Kind::begin, 10.0, {}}).ok());
  AgentEvent end{Phase::learn, AgentEvent::Kind::end, 20.0, {}, {{"cpu_pct", {50, 97.5, 100}}, {"rss_bytes", {1e8, 2e8, 3e8}}}};
  REQUIRE(f.ledger.apply_agent_event(1, end).ok());
  end.stats["cpu_pct"] = {0, 0, 0};  // a replay with other numbers changes nothing
  end.stats["read_bps"] = {1, 2, 3};
  auto replay = f.ledger.apply_agent_event(1, end);
  REQUIRE(replay.ok());
  CHECK_FALSE(replay->recorded);
  auto learn = (*f.ledger.phases(1))[Phase::learn];
  REQUIRE(learn.stats.size() == 2);
  CHECK(learn.stats["cpu_pct"].avg == 97.5);
  CHECK(learn.stats["rss_bytes"].max == 3e8);
  CHECK_FALSE(f.db->exec("UPDATE phase_stats SET avg = 0").ok());
  CHECK_FALSE(f.db->exec("DELETE FROM phase_stats").ok());
}

TEST_CASE("progress events are idempotent by epoch; daemon phases and finished runs are refused") {
  DaemonFixture f;
  CHECK(f.ledger.apply_agent_event(1, {Phase::install, AgentEvent::Kind::begin, 1, {}}).code() ==
        Code::already_exists);  // still queued: no instance exists that could report
  REQUIRE(f.ledger.advance(1, RunStatus::booting, "").ok());
  AgentEvent p{Phase::learn, AgentEvent::Kind::progress, 5, {{"epoch", 1}, {"loss", 0.5}}};
  CHECK(f.ledger.apply_agent_event(1, p)->recorded);
  p.attrs["loss"] = 9.9;
  CHECK_FALSE(f.ledger.apply_agent_event(1, p)->recorded);
  CHECK((*f.store.epochs_of(1))[0]["loss"] == 0.5);

  CHECK(f.ledger.apply_agent_event(1, {Phase::poweroff, AgentEvent::Kind::end, 1, {}}).code() ==
        Code::invalid_argument);
  REQUIRE(f.ledger.advance(2, RunStatus::cancelled, "").ok());
  CHECK(f.ledger.apply_agent_event(2, {Phase::install, AgentEvent::Kind::begin, 1, {}}).code() ==
        Code::already_exists);
}

TEST_CASE("an instance handle is stored once") {
  DaemonFixture f;
  nlohmann::json h = {{"provider", "local"}, {"id", "a"}};
  CHECK(f.ledger.set_instance(1, h).ok());
  CHECK(f.ledger.set_instance(1, h).ok());  // the same handle again: idempotent
  CHECK(f.ledger.set_instance(1, {{"provider", "local"}, {"id", "b"}}).code() == Code::already_exists);
  CHECK(f.store.run(1)->instance.value()["id"] == "a");
}

TEST_CASE("a multi-node run: each node's marks kept, the run's phase is its slowest node's once all have ended it") {
  DaemonFixture f;
  auto spec = R"({"name":"n","workload":{"epochs":1},"repetitions":1,
                  "configs":[{"provider":"local","cores":1,"nodes":3,"dist":"ps"}]})";
  const int64_t exp = tsum::testing::create_experiment(f.store, spec);
  auto runs = f.store.runs_of(exp);
  REQUIRE(runs->size() == 1);
  const int64_t run = (*runs)[0].id;
  CHECK((*runs)[0].nodes == 3);
  REQUIRE(f.ledger.advance(run, RunStatus::booting, "").ok());
  f.clock.set(1000);
  REQUIRE(f.ledger.record_mark(run, Phase::startup, Mark::begin, 1000, ClockDomain::daemon).ok());

  auto event = [&](int node, Phase phase, AgentEvent::Kind kind, double mono, nlohmann::json attrs = {}) {
    AgentEvent ev{phase, kind, mono, attrs.is_null() ? nlohmann::json::object() : attrs};
    ev.node = node;
    auto out = f.ledger.apply_agent_event(run, ev);
    REQUIRE(out.ok());
    return *out;
  };
  using K = AgentEvent::Kind;
  // Nodes speak at 1010, 1012 and 1017: startup ends with the last, the spread is 7 s.
  f.clock.set(1010);
  CHECK_FALSE(event(1, Phase::install, K::begin, 50).first_sign_of_life);
  CHECK(*f.ledger.status(run) == RunStatus::installing);  // any node's begin moves the run forward
  f.clock.set(1012);
  event(0, Phase::install, K::begin, 500);
  CHECK_FALSE((*f.ledger.phases(run))[Phase::startup].end.has_value());  // node 2 has not spoken yet
  f.clock.set(1017);
  CHECK(event(2, Phase::install, K::begin, 7).first_sign_of_life);
  auto phases = f.ledger.phases(run);
  REQUIRE((*phases)[Phase::startup].end);
  CHECK((*phases)[Phase::startup].seconds() == doctest::Approx(17));
  CHECK((*phases)[Phase::startup].end->attrs["spread_s"].get<double>() == doctest::Approx(7));

  // install: 4 s, 9 s and 6 s on the nodes' own clocks; the run's is node 1's 9 s, once the last has ended.
  event(0, Phase::install, K::end, 504, {{"method", "bundle"}});
  event(1, Phase::install, K::end, 59);
  CHECK_FALSE((*f.ledger.phases(run)).count(Phase::install));
  // A replayed end changes nothing, and a node the run does not have is refused.
  CHECK_FALSE(event(1, Phase::install, K::end, 99).recorded);
  AgentEvent stray{Phase::install, K::end, 1, nlohmann::json::object()};
  stray.node = 3;
  CHECK(f.ledger.apply_agent_event(run, stray).code() == Code::invalid_argument);
  event(2, Phase::install, K::end, 13);
  phases = f.ledger.phases(run);
  REQUIRE((*phases)[Phase::install].seconds());
  CHECK(*(*phases)[Phase::install].seconds() == doctest::Approx(9));
  const auto& attrs = (*phases)[Phase::install].end->attrs;
  CHECK(attrs["method"] == "bundle");  // node 0's attrs: rank 0 reports for the run
  CHECK(attrs["slowest_node"] == 1);
  CHECK(attrs["node_seconds"] == nlohmann::json{4.0, 9.0, 6.0});
  auto nodes = f.ledger.node_phases(run);
  REQUIRE(nodes->size() == 3);
  CHECK(*(*nodes)[2][Phase::install].seconds() == doctest::Approx(6));

  // Progress is node 0's; another node's epochs are not the run's.
  event(1, Phase::learn, K::progress, 70, {{"epoch", 1}});
  CHECK(f.store.epochs_of(run)->empty());
  event(0, Phase::learn, K::progress, 600, {{"epoch", 1}});
  CHECK(f.store.epochs_of(run)->size() == 1);
}

TEST_CASE("a multi-node run's handle grows node by node and never loses one") {
  DaemonFixture f;
  auto group = [](std::vector<std::string> ids) {
    nlohmann::json nodes = nlohmann::json::array();
    for (const auto& id : ids) nodes.push_back({{"provider", "local"}, {"id", id}, {"data", nlohmann::json::object()}});
    return nlohmann::json{{"provider", "local"}, {"id", ids[0]}, {"data", {{"nodes", nodes}}}};
  };
  CHECK(f.ledger.extend_instance(1, group({"a"})).ok());
  CHECK(f.ledger.extend_instance(1, group({"a", "b"})).ok());
  CHECK(f.ledger.extend_instance(1, group({"a", "b"})).ok());  // a retry
  CHECK(f.ledger.extend_instance(1, group({"a", "c"})).code() == Code::already_exists);
  CHECK(f.ledger.extend_instance(1, group({"b"})).code() == Code::already_exists);
  CHECK((*f.store.run(1)->instance)["data"]["nodes"].size() == 2);
}

TEST_CASE("attempts: one a restarted daemon found unfinished ends \"abandoned\"; an unknown outcome is refused") {
  DaemonFixture f;
  const int64_t run = 1;
  REQUIRE(f.ledger.advance(run, RunStatus::provisioning, "dispatched").ok());
  REQUIRE(f.ledger.begin_attempt(run, {"aws", "c5.large", "spot", 0.03}).ok());
  CHECK_FALSE(f.ledger.next_attempt(run, {"aws", "c5.large", "spot", 0.03}, "?", "lost").ok());
  CHECK(f.store.run(run)->attempt == 1);  // the refused change left nothing behind
  REQUIRE(f.ledger.next_attempt(run, {"aws", "c5.large", "spot", 0.03}, "daemon restarted", "abandoned").ok());
  auto all = f.ledger.attempts(run);
  REQUIRE(all.ok());
  REQUIRE(all->size() == 1);
  CHECK((*all)[0].outcome == "abandoned");
  CHECK((*all)[0].reason == "daemon restarted");
  CHECK(f.store.run(run)->attempt == 2);
}

TEST_CASE("attempts: an interruption's notice and checkpoint are kept with the attempt; the next one has phases of "
          "its own, resumes the last checkpoint, and the run's history keeps both") {
  DaemonFixture f;
  const int64_t run = 1;
  auto ev = [](Phase p, AgentEvent::Kind k, double mono, nlohmann::json attrs = nlohmann::json::object()) {
    AgentEvent e;
    e.phase = p;
    e.kind = k;
    e.mono_s = mono;
    e.attrs = std::move(attrs);
    return e;
  };
  REQUIRE(f.ledger.advance(run, RunStatus::provisioning, "dispatched").ok());
  REQUIRE(f.ledger.begin_attempt(run, {"aws", "c5.large", "spot", 0.03}).ok());
  REQUIRE(f.ledger.begin_attempt(run, {"aws", "c5.large", "spot", 99}).ok());  // once: the first stays
  REQUIRE(f.ledger.record_mark(run, Phase::startup, Mark::begin, 10, ClockDomain::daemon).ok());
  REQUIRE(f.ledger.set_instance(run, {{"provider", "aws"}, {"id", "i-1"}}).ok());
  REQUIRE(f.ledger.apply_agent_event(run, ev(Phase::learn, AgentEvent::Kind::begin, 5)).ok());

  // A checkpoint naming an artifact the daemon does not hold is refused; one it holds is kept once.
  const std::string sha(64, 'a');
  auto missing = f.ledger.apply_agent_event(
      run, ev(Phase::learn, AgentEvent::Kind::checkpoint, 6, {{"artifact", "checkpoint-a1-1.tar.gz"}, {"sha256", sha}}));
  CHECK(missing.code() == Code::invalid_argument);
  REQUIRE(f.db->exec("INSERT INTO run_artifacts (run_id, name, sha256, bytes, created_at) VALUES (1, "
                     "'checkpoint-a1-1.tar.gz', '" + sha + "', 1234, 0)").ok());
  auto notice = f.ledger.apply_agent_event(
      run, ev(Phase::learn, AgentEvent::Kind::interrupted, 6.5, {{"cloud", "aws"}, {"notice", "{\"action\": \"terminate\"}"}}));
  REQUIRE(notice.ok());
  CHECK(notice->recorded);
  auto again = f.ledger.apply_agent_event(
      run, ev(Phase::learn, AgentEvent::Kind::interrupted, 7, {{"cloud", "aws"}, {"notice", "later"}}));
  REQUIRE(again.ok());
  CHECK_FALSE(again->recorded);  // the first notice stands
  nlohmann::json trainer = {{"event", "checkpoint"}, {"epoch", 2}, {"step", 40}, {"learn_seconds", 12.5},
                            {"reason", "signal"}, {"path", "/opt/tsum/ckpt/state.pt"}};
  auto kept = f.ledger.apply_agent_event(run, ev(Phase::learn, AgentEvent::Kind::checkpoint, 8,
                                                 {{"artifact", "checkpoint-a1-1.tar.gz"}, {"sha256", sha},
                                                  {"trainer", trainer}}));
  REQUIRE(kept.ok());
  CHECK(kept->recorded);
  CHECK(*f.ledger.status(run) == RunStatus::learning);  // neither mark moves the run

  // The machine is gone: the run goes back to the queue for its second attempt, on on-demand.
  REQUIRE(f.ledger.advance(run, RunStatus::terminating, "").ok());
  REQUIRE(f.ledger.record_mark(run, Phase::poweroff, Mark::end, 50, ClockDomain::daemon).ok());
  REQUIRE(f.ledger.next_attempt(run, {"aws", "c5.large", "on-demand", 0.085}, "interrupted by aws (notice)").ok());
  auto row = f.store.run(run);
  REQUIRE(row.ok());
  CHECK(row->status == RunStatus::queued);
  CHECK(row->attempt == 2);
  CHECK(row->market == "on-demand");
  CHECK(row->hourly_price == doctest::Approx(0.085));
  CHECK_FALSE(row->instance.has_value());
  // Its phases start empty; the first attempt's stay.
  CHECK(f.ledger.phases(run)->empty());
  REQUIRE(f.ledger.advance(run, RunStatus::provisioning, "dispatched").ok());
  REQUIRE(f.ledger.begin_attempt(run, {"aws", "c5.large", "on-demand", 0.085}).ok());
  REQUIRE(f.ledger.record_mark(run, Phase::startup, Mark::begin, 60, ClockDomain::daemon).ok());
  CHECK(f.ledger.phases(run)->at(Phase::startup).begin->t == 60);
  auto ck = f.ledger.last_checkpoint(run);
  REQUIRE(ck.ok());
  REQUIRE(ck->has_value());
  CHECK((*ck)->artifact == "checkpoint-a1-1.tar.gz");
  CHECK((*ck)->attrs["epoch"] == 2);
  CHECK_FALSE((*ck)->attrs.contains("path"));  // the machine's path means nothing elsewhere
  REQUIRE(f.ledger.advance(run, RunStatus::failed, "gave up").ok());

  auto all = f.ledger.attempts(run);
  REQUIRE(all.ok());
  REQUIRE(all->size() == 2);
  const auto& first = (*all)[0];
  CHECK(first.spec.market == "spot");
  CHECK(first.spec.hourly_price == doctest::Approx(0.03));
  CHECK(first.outcome == "interrupted");
  CHECK(first.reason == "interrupted by aws (notice)");
  REQUIRE(first.notice.has_value());
  CHECK((*first.notice)["source"] == "agent");
  CHECK((*first.notice)["text"] == "{\"action\": \"terminate\"}");
  CHECK((*first.instance)["id"] == "i-1");
  CHECK(first.phases.at(Phase::startup).begin->t == 10);
  CHECK(first.phases.at(Phase::poweroff).end->t == 50);
  CHECK((*all)[1].outcome == "failed");  // it ended with the run
  CHECK((*all)[1].spec.market == "on-demand");
  // A finished run takes no next attempt.
  CHECK(f.ledger.next_attempt(run, {"aws", "c5.large", "spot", 0.03}, "late").code() == Code::already_exists);
  // The transitions say so: learning > terminating > queued (attempt 2) > provisioning > failed.
  auto st = f.db->prepare("SELECT to_status FROM run_transitions WHERE run_id = 1 ORDER BY seq");
  std::vector<std::string> seen;
  while (*st->step()) seen.push_back(st->text(0));
  CHECK(seen == std::vector<std::string>{"provisioning", "learning", "terminating", "queued", "provisioning", "failed"});
}

TEST_CASE("resume_checkpoints: each rank of a two-node run from its own checkpoint at the newest step both reached") {
  DaemonFixture f;
  const int64_t run = 1;
  REQUIRE(f.db->exec("UPDATE runs SET nodes = 2 WHERE id = 1").ok());
  REQUIRE(f.ledger.advance(run, RunStatus::provisioning, "dispatched").ok());
  REQUIRE(f.ledger.begin_attempt(run, {"aws", "c5.large", "spot", 0.03}).ok());
  REQUIRE(f.ledger.set_instance(run, {{"provider", "aws"}, {"id", "i-1+1"}}).ok());
  // Node 0 and node 1 at step 10, then node 0 alone at step 20 (node 1 went without notice before its own).
  int n = 0;
  for (auto [node, step] : {std::pair{0, 10}, {1, 10}, {0, 20}}) {
    const std::string name = "checkpoint-a1-n" + std::to_string(node) + "-" + std::to_string(++n) + ".tar.gz";
    const std::string sha(64, static_cast<char>('a' + n));
    REQUIRE(f.db->exec("INSERT INTO run_artifacts (run_id, name, sha256, bytes, created_at) VALUES (1, '" + name +
                       "', '" + sha + "', 100, 0)").ok());
    AgentEvent e;
    e.phase = Phase::learn;
    e.kind = AgentEvent::Kind::checkpoint;
    e.node = node;
    e.mono_s = n;
    e.attrs = {{"artifact", name}, {"sha256", sha}, {"trainer", {{"step", step}, {"reason", "periodic"}, {"rank", node}}}};
    f.clock.advance(1);  // received in this order
    auto kept = f.ledger.apply_agent_event(run, e);
    REQUIRE(kept.ok());
    CHECK(kept->recorded);
  }
  auto both = f.ledger.resume_checkpoints(run, 2);
  REQUIRE(both.ok());
  REQUIRE(both->size() == 2);
  CHECK((*both)[0].artifact == "checkpoint-a1-n0-1.tar.gz");
  CHECK((*both)[1].artifact == "checkpoint-a1-n1-2.tar.gz");
  CHECK((*both)[1].attrs["node"] == 1);
  CHECK_FALSE((*both)[1].attrs.contains("rank"));
  // One machine would take the newest alone.
  auto one = f.ledger.resume_checkpoints(run, 1);
  REQUIRE(one.ok());
  REQUIRE(one->size() == 1);
  CHECK(one->front().artifact == "checkpoint-a1-n0-3.tar.gz");
  // Three ranks never all checkpointed: nothing to resume.
  CHECK(f.ledger.resume_checkpoints(run, 3)->empty());
}

TEST_CASE("move_attempt: a create refused for capacity moves the attempt to another offer, keeping what it skipped; "
          "never once a machine is recorded") {
  DaemonFixture f;
  const int64_t run = 1;
  REQUIRE(f.ledger.advance(run, RunStatus::provisioning, "dispatched").ok());
  REQUIRE(f.ledger.begin_attempt(run, {"aws", "t3.micro", "spot", 0.0031, "", "us-east-1", "USD"}).ok());
  const nlohmann::json skipped = {{"offer", "aws us-east-1 t3.micro spot"}, {"error", "InsufficientInstanceCapacity"}};
  AttemptSpec west{"aws", "t3.micro", "spot", 0.0036, "", "us-west-2", "USD"};
  REQUIRE(f.ledger.move_attempt(run, west, skipped).ok());
  AttemptSpec gce{"gce", "e2-standard-2", "spot", 0.067, "", "us-central1-a", "USD",
                  {{"vcpus", 2}, {"memory_gib", 8.0}}};
  REQUIRE(f.ledger.move_attempt(run, gce, {{"offer", "aws us-west-2 t3.micro spot"}, {"error", "x"}}).ok());
  auto row = f.store.run(run);
  REQUIRE(row.ok());
  CHECK(row->provider == "gce");
  CHECK(row->instance_type == "e2-standard-2");
  CHECK(row->region == "us-central1-a");
  CHECK(row->machine["vcpus"] == 2);
  CHECK(row->attempt == 1);  // the same attempt
  auto all = f.ledger.attempts(run);
  REQUIRE(all.ok());
  REQUIRE(all->size() == 1);
  CHECK(all->front().spec.provider == "gce");
  CHECK(all->front().spec.region == "us-central1-a");
  REQUIRE(all->front().skipped.size() == 2);
  CHECK(all->front().skipped[0] == skipped);
  // A machine recorded: the attempt is where it is.
  REQUIRE(f.ledger.set_instance(run, {{"provider", "gce"}, {"id", "vm-1"}}).ok());
  CHECK(f.ledger.move_attempt(run, west, skipped).code() == Code::already_exists);
}
