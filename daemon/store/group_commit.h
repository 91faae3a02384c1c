// Group commit: the short writes that arrive together share one SQLite transaction.
//
// With a thousand agents posting events, each event paid a transaction of its own (BEGIN IMMEDIATE, then COMMIT
// with its WAL append and its lock calls) and its token check a read transaction: a third of the daemon's time
// per event (perf, bench/rest.sh). run(job) queues the job; the first job queued posts a flush to the database's
// executor, which runs every queued job, in order, inside one BEGIN IMMEDIATE ... COMMIT and then wakes each
// caller with that commit's status. A job's own Transaction is a SAVEPOINT inside it (Transaction nests), so a
// job that fails rolls back alone and the others commit. A caller hears back only once the batch is committed,
// as durable as any other commit here (WAL, synchronous=NORMAL): nothing is answered before it is written. If
// the batch cannot begin or commit, every caller of it gets that error (and what its job did is rolled back). At
// most kMaxBatch jobs go in one transaction; the rest wait for the next.
//
// Threads: jobs always run on the database's executor (the thread that owns the Db), synchronously; a job cannot
// suspend and must not start a transaction other than through Transaction. run() may be called from a coroutine
// on any executor (the network thread's, for POST /v1/runs/{id}/events): a batch costs one hand-over to the
// database's thread and one back to each caller's executor, however many jobs it holds.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

#include "common/result.h"

namespace tsum::daemon {

class Db;

class GroupCommit {
 public:
  static constexpr std::size_t kMaxBatch = 256;

  // `executor`: the database's (its thread runs every job and every transaction).
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
  Stats stats() const { return {batches_.load(), jobs_.load()}; }

 private:
  struct Slot;
  void flush();

  Db& db_;
  boost::asio::any_io_executor executor_;
  std::mutex mutex_;  // guards queue_ and flush_posted_
  std::deque<std::shared_ptr<Slot>> queue_;
  bool flush_posted_ = false;
  std::atomic<uint64_t> batches_{0}, jobs_{0};
};

}  // namespace tsum::daemon
