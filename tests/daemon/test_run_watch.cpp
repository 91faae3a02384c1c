// RunWatch wakes the watchers of a changed run; the Ledger reports every change to its observer.
#include <doctest/doctest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <optional>
#include <vector>

#include "daemon/fixture.h"
#include "daemon/runs/run_watch.h"

using namespace tsum;
using namespace tsum::daemon;
using tsum::testing::DaemonFixture;
using namespace std::chrono_literals;
namespace asio = boost::asio;

namespace {

// Starts a wait on `watch` and returns where its result will land.
std::shared_ptr<std::optional<RunWatch::Wake>> start_wait(asio::io_context& io, RunWatch& watch, int64_t run,
                                                          uint64_t seen, std::chrono::milliseconds timeout) {
  auto out = std::make_shared<std::optional<RunWatch::Wake>>();
  asio::co_spawn(io, [&watch, run, seen, timeout, out]() -> asio::awaitable<void> {
    *out = co_await watch.wait(run, seen, timeout);
  }, asio::detached);
  return out;
}

}  // namespace

TEST_CASE("run watch: notify wakes the run's waiters, not other runs' waiters") {
  asio::io_context io;
  RunWatch watch(io.get_executor());
  CHECK(watch.version(1) == 0);
  auto one = start_wait(io, watch, 1, 0, 60s);
  auto other = start_wait(io, watch, 2, 0, 50ms);
  io.poll();
  CHECK(watch.waiting() == 2);
  watch.notify(1);
  CHECK(watch.version(1) != 0);
  io.run_for(5s);  // returns once both waits are done: run 1 at once, run 2 when its 50 ms pass
  REQUIRE(one->has_value());
  CHECK(**one == RunWatch::Wake::changed);
  REQUIRE(other->has_value());
  CHECK(**other == RunWatch::Wake::timeout);
  CHECK(watch.waiting() == 0);
}

TEST_CASE("run watch: a change between reading the version and waiting is not lost") {
  asio::io_context io;
  RunWatch watch(io.get_executor());
  const uint64_t seen = watch.version(7);
  watch.notify(7);  // the run changed after the watcher read it, before it waited
  auto w = start_wait(io, watch, 7, seen, 60s);
  io.poll();
  REQUIRE(w->has_value());
  CHECK(**w == RunWatch::Wake::changed);
  const uint64_t v = watch.version(7);
  watch.notify(7);
  CHECK(watch.version(7) != v);
}

TEST_CASE("run watch: only the runs changed last keep a version; a waiter on an older one wakes once, not never") {
  asio::io_context io;
  RunWatch watch(io.get_executor());
  watch.notify(1);
  const uint64_t seen = watch.version(1);
  for (int64_t run = 2; run <= static_cast<int64_t>(RunWatch::kVersionsKept) + 1; ++run) watch.notify(run);
  CHECK(watch.version(1) == 0);  // let go
  CHECK(watch.version(2) != 0);
  auto w = start_wait(io, watch, 1, seen, 60s);
  io.poll();
  REQUIRE(w->has_value());
  CHECK(**w == RunWatch::Wake::changed);  // it reads the run again, then waits on version 0
  io.restart();  // it ran out of work
  auto again = start_wait(io, watch, 1, watch.version(1), 60s);
  io.poll();
  CHECK_FALSE(again->has_value());
  CHECK(watch.waiting() == 1);
  watch.notify(1);
  io.poll();
  REQUIRE(again->has_value());
  CHECK(**again == RunWatch::Wake::changed);
}

TEST_CASE("run watch: close wakes every waiter and every later wait with closed") {
  asio::io_context io;
  RunWatch watch(io.get_executor());
  auto a = start_wait(io, watch, 1, 0, 60s);
  auto b = start_wait(io, watch, 2, 0, 60s);
  io.poll();
  watch.close();
  io.run_for(5s);
  REQUIRE(a->has_value());
  REQUIRE(b->has_value());
  CHECK(**a == RunWatch::Wake::closed);
  CHECK(**b == RunWatch::Wake::closed);
  auto later = start_wait(io, watch, 3, 0, 60s);
  io.restart();
  io.poll();
  REQUIRE(later->has_value());
  CHECK(**later == RunWatch::Wake::closed);
}

TEST_CASE("ledger observer hears each change: status, mark, agent event; not a duplicate") {
  DaemonFixture f;
  std::vector<int64_t> heard;
  f.ledger.set_observer([&](int64_t run) { heard.push_back(run); });

  REQUIRE(f.ledger.advance(1, RunStatus::provisioning, "dispatched").ok());
  CHECK(heard == std::vector<int64_t>{1});
  REQUIRE(f.ledger.advance(1, RunStatus::provisioning, "again").ok());  // no change, no news
  CHECK(heard.size() == 1);
  CHECK(!f.ledger.advance(1, RunStatus::queued, "backwards").ok());
  CHECK(heard.size() == 1);

  REQUIRE(f.ledger.record_mark(2, Phase::startup, Mark::begin, 1.0, ClockDomain::daemon).ok());
  CHECK(heard.back() == 2);
  const size_t before = heard.size();
  REQUIRE(f.ledger.record_mark(2, Phase::startup, Mark::begin, 9.0, ClockDomain::daemon).ok());  // replay
  CHECK(heard.size() == before);

  REQUIRE(f.ledger.advance(1, RunStatus::booting, "created").ok());
  heard.clear();
  AgentEvent ev{Phase::install, AgentEvent::Kind::begin, 0.5, nlohmann::json::object()};
  REQUIRE(f.ledger.apply_agent_event(1, ev).ok());
  REQUIRE(!heard.empty());
  CHECK(heard.back() == 1);
  heard.clear();
  auto replay = f.ledger.apply_agent_event(1, ev);
  REQUIRE(replay.ok());
  CHECK(heard.empty());  // a replayed event changes nothing

  AgentEvent epoch{Phase::learn, AgentEvent::Kind::progress, 2.0, {{"epoch", 1}, {"loss", 0.5}}};
  REQUIRE(f.ledger.apply_agent_event(1, epoch).ok());
  CHECK(heard == std::vector<int64_t>{1});
}
