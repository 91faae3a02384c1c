// Group commit: the short writes that arrive together share one SQLite transaction.
//
// With a thousand agents posting events, each event paid a transaction of its own (BEGIN IMMEDIATE, then COMMIT
// with its WAL append and its lock calls) and its token check a read transaction: a third of the daemon's time
// per event (perf, bench/rest.sh). run(job) queues the job; the first job of a turn of the event loop posts a
// flush, which runs every queued job, in order, inside one BEGIN IMMEDIATE ... COMMIT and then wakes each caller
// with that commit's status. A job's own Transaction is a SAVEPOINT inside it (Transaction nests), so a job that
// fails rolls back alone and the others commit. A caller hears back only once the batch is committed, as durable
// as any other commit here (WAL, synchronous=NORMAL): nothing is answered before it is written. If the batch
// cannot begin or commit, every caller of it gets that error (and what its job did is rolled back). At most
// kMaxBatch jobs go in one transaction; the rest wait for the next.
//
// A job runs synchronously on the executor's thread and cannot suspend; it must not start a transaction of its
// own other than through Transaction. Not thread-safe: one event loop thread, like Db.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>

#include "common/result.h"

namespace tsum::daemon {

class Db;

class GroupCommit {
 public:
  static constexpr std::size_t kMaxBatch = 256;

  GroupCommit(Db& db, boost::asio::any_io_executor executor) : db_(db), executor_(std::move(executor)) {}
  GroupCommit(const GroupCommit&) = delete;
  GroupCommit& operator=(const GroupCommit&) = delete;

  // Runs `job` in the next batch; returns once that batch committed (ok) or failed (its error). A job that
  // throws gets Code::internal and the batch goes on without what it wrote.
  boost::asio::awaitable<Status> run(std::function<void()> job);

  struct Stats {
    uint64_t batches = 0;  // transactions begun
    uint64_t jobs = 0;     // jobs run
  };
  const Stats& stats() const { return stats_; }

 private:
  struct Slot;
  void flush();

  Db& db_;
  boost::asio::any_io_executor executor_;
  std::deque<std::shared_ptr<Slot>> queue_;
  bool flush_posted_ = false;
  Stats stats_;
};

}  // namespace tsum::daemon
