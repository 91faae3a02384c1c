// GroupCommit: the jobs queued in one turn of the event loop share one transaction; each caller resumes only once
// it is committed; a job that fails rolls back alone; a batch that cannot begin fails every caller of it.
#include <doctest/doctest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "daemon/store/db.h"
#include "daemon/store/group_commit.h"
#include "support/table_db.h"

using namespace tsum;
using namespace tsum::daemon;
using tsum::testing::TableDb;
namespace asio = boost::asio;

namespace {

// Rows of t as another connection sees them: only what is committed.
std::vector<int64_t> committed_rows(const std::string& path) {
  auto other = Db::open(path);
  REQUIRE(other.ok());
  auto st = (*other)->prepare("SELECT x FROM t ORDER BY x");
  REQUIRE(st.ok());
  std::vector<int64_t> out;
  while (*st->step()) out.push_back(st->int64(0));
  return out;
}

Status insert(Db& db, int64_t x) {
  auto st = db.prepare("INSERT INTO t VALUES (?)");
  if (!st) return st.error();
  return st->bind(x).run();
}

}  // namespace

TEST_CASE("group commit: one transaction for the jobs of a turn, callers resume once committed, a failed job rolls "
          "back alone") {
  TableDb table;
  Db& d = *table.db;
  const std::string& path = table.path;
  asio::io_context io;
  GroupCommit commits(d, io.get_executor());

  // Job k writes k in a Transaction of its own, as the ledger's doors do. Job 2 fails half-way (a duplicate), so
  // its Transaction is never committed; job 3 throws after writing.
  std::vector<std::optional<Status>> status(5);
  std::vector<std::vector<int64_t>> seen_at_resume(5);
  for (int k = 0; k < 5; ++k) {
    asio::co_spawn(io, [&, k]() -> asio::awaitable<void> {
      status[k] = co_await commits.run([&d, k] {
        Transaction tx(d);
        REQUIRE(tx.begun().ok());
        CHECK(insert(d, 10 + k).ok());
        if (k == 2) {
          CHECK_FALSE(insert(d, 10 + k).ok());
          return;  // not committed: rolled back
        }
        if (k == 3) throw std::runtime_error("boom");
        REQUIRE(tx.commit().ok());
      });
      CHECK_FALSE(d.in_transaction());
      seen_at_resume[k] = committed_rows(path);
    }, asio::detached);
  }
  io.run();

  CHECK(commits.stats().batches == 1);
  CHECK(commits.stats().jobs == 5);
  const std::vector<int64_t> kept{10, 11, 14};
  CHECK(committed_rows(path) == kept);
  for (int k = 0; k < 5; ++k) {
    REQUIRE(status[k].has_value());
    CHECK(seen_at_resume[k] == kept);  // every caller resumed after the commit, none before
    if (k == 3) {
      REQUIRE_FALSE(status[k]->ok());
      CHECK(status[k]->error().code == Code::internal);
      CHECK(status[k]->error().detail.find("boom") != std::string::npos);
    } else {
      CHECK(status[k]->ok());  // job 2's failure is its own answer; the batch committed
    }
  }
}

TEST_CASE("group commit: more jobs than a batch holds go in several transactions, in order") {
  TableDb table;
  Db& d = *table.db;
  const std::string& path = table.path;
  asio::io_context io;
  GroupCommit commits(d, io.get_executor());
  const int n = static_cast<int>(2 * GroupCommit::kMaxBatch + 3);
  std::vector<int64_t> order;
  int ok = 0;
  for (int k = 0; k < n; ++k)
    asio::co_spawn(io, [&, k]() -> asio::awaitable<void> {
      auto s = co_await commits.run([&, k] {
        order.push_back(k);
        CHECK(insert(d, k).ok());
      });
      ok += s.ok();
    }, asio::detached);
  io.run();
  CHECK(ok == n);
  CHECK(commits.stats().batches == 3);
  CHECK(committed_rows(path).size() == static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) CHECK(order[k] == k);
}

TEST_CASE("group commit: a batch that cannot begin (the database locked by another writer) fails each of its "
          "callers and runs none of their jobs") {
  TableDb table;
  Db& d = *table.db;
  const std::string& path = table.path;
  REQUIRE(d.exec("PRAGMA busy_timeout = 20").ok());
  auto other = Db::open(path);
  REQUIRE(other.ok());
  REQUIRE((*other)->exec("BEGIN IMMEDIATE").ok());  // holds the write lock

  asio::io_context io;
  GroupCommit commits(d, io.get_executor());
  int ran = 0;
  std::vector<Status> status;
  for (int k = 0; k < 3; ++k)
    asio::co_spawn(io, [&, k]() -> asio::awaitable<void> {
      status.push_back(co_await commits.run([&, k] {
        ++ran;
        (void)insert(d, k);
      }));
    }, asio::detached);
  io.run();
  CHECK(ran == 0);
  REQUIRE(status.size() == 3);
  for (const auto& s : status) CHECK_FALSE(s.ok());
  REQUIRE((*other)->exec("ROLLBACK").ok());

  // The lock gone, the next batch goes through.
  io.restart();
  std::optional<Status> later;
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    later = co_await commits.run([&] { CHECK(insert(d, 7).ok()); });
  }, asio::detached);
  io.run();
  REQUIRE(later.has_value());
  CHECK(later->ok());
  CHECK(committed_rows(path) == std::vector<int64_t>{7});
}

TEST_CASE("group commit: callers on another thread hand their jobs to the database's thread and resume on their "
          "own, once the batch is committed") {
  TableDb table;
  Db& d = *table.db;
  const std::string& path = table.path;
  asio::io_context io, net;  // the database's loop, the callers' loop
  auto io_work = asio::make_work_guard(io);
  GroupCommit commits(d, io.get_executor());
  std::thread db_thread([&] { io.run(); });
  const auto db_id = db_thread.get_id();

  const int n = 40;
  std::vector<std::thread::id> job_threads(n), resumed_on(n);
  std::vector<int> ok(n, 0);
  std::vector<size_t> committed_at_resume(n, 0);
  for (int k = 0; k < n; ++k)
    asio::co_spawn(net, [&, k]() -> asio::awaitable<void> {
      auto s = co_await commits.run([&, k] {
        job_threads[k] = std::this_thread::get_id();
        CHECK(insert(d, k).ok());
      });
      resumed_on[k] = std::this_thread::get_id();
      ok[k] = s.ok();
      committed_at_resume[k] = committed_rows(path).size();
    }, asio::detached);
  std::thread caller_thread([&] { net.run(); });
  const auto caller_id = caller_thread.get_id();
  caller_thread.join();  // net.run() returns once every caller has resumed and finished
  io_work.reset();
  db_thread.join();

  for (int k = 0; k < n; ++k) {
    CHECK(ok[k] == 1);
    CHECK(job_threads[k] == db_id);
    CHECK(resumed_on[k] == caller_id);
    CHECK(committed_at_resume[k] >= static_cast<size_t>(k + 1));  // its own row, at least, was committed
  }
  CHECK(committed_rows(path).size() == static_cast<size_t>(n));
  CHECK(commits.stats().jobs == static_cast<uint64_t>(n));
  CHECK(commits.stats().batches < static_cast<uint64_t>(n));  // they were queued together
}
