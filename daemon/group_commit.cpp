#include "daemon/group_commit.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <exception>
#include <string>
#include <vector>

#include "daemon/db.h"

namespace tsum::daemon {

namespace asio = boost::asio;

struct GroupCommit::Slot {
  explicit Slot(const asio::any_io_executor& ex, std::function<void()> j)
      : job(std::move(j)), wake(ex, asio::steady_timer::time_point::max()) {}
  std::function<void()> job;
  asio::steady_timer wake;  // cancelled by the flush that ran the job
  Status status;
  bool done = false;
};

asio::awaitable<Status> GroupCommit::run(std::function<void()> job) {
  auto slot = std::make_shared<Slot>(executor_, std::move(job));
  queue_.push_back(slot);
  if (!flush_posted_) {
    flush_posted_ = true;
    asio::post(executor_, [this] { flush(); });
  }
  while (!slot->done) (void)co_await slot->wake.async_wait(asio::as_tuple(asio::use_awaitable));
  co_return slot->status;
}

void GroupCommit::flush() {
  flush_posted_ = false;
  std::vector<std::shared_ptr<Slot>> batch;
  while (!queue_.empty() && batch.size() < kMaxBatch) {
    batch.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  if (!queue_.empty()) {
    flush_posted_ = true;
    asio::post(executor_, [this] { flush(); });
  }
  Status outcome;
  {
    Transaction tx(db_);
    if (!tx.begun()) {
      outcome = tx.begun();
    } else {
      ++stats_.batches;
      for (auto& slot : batch) {
        ++stats_.jobs;
        try {
          slot->job();
        } catch (const std::exception& e) {
          slot->status = make_error(Code::internal, std::string("request failed: ") + e.what());
        } catch (...) {
          slot->status = make_error(Code::internal, "request failed: unknown exception");
        }
      }
      outcome = tx.commit();
    }
  }
  for (auto& slot : batch) {
    if (!outcome) slot->status = outcome;
    slot->done = true;
    slot->job = nullptr;  // what it captured goes now, not when the caller resumes
    slot->wake.cancel();
  }
}

}  // namespace tsum::daemon
