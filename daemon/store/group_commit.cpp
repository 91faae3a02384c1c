#include "daemon/store/group_commit.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <exception>
#include <utility>
#include <string>
#include <vector>

#include "daemon/store/db.h"

namespace tsum::daemon {

namespace asio = boost::asio;

struct GroupCommit::Slot {
  Slot(const asio::any_io_executor& caller, std::function<void()> j)
      : job(std::move(j)), caller(caller), wake(caller, asio::steady_timer::time_point::max()) {}
  std::function<void()> job;
  asio::any_io_executor caller;
  asio::steady_timer wake;  // the caller's: cancelled on the caller's executor once the batch is done
  Status status;            // written on the database's thread before the hand-back, read after it
  bool done = false;        // the caller's executor only
};

asio::awaitable<Status> GroupCommit::run(std::function<void()> job) {
  auto slot = std::make_shared<Slot>(co_await asio::this_coro::executor, std::move(job));
  bool post = false;
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(slot);
    post = !std::exchange(flush_posted_, true);
  }
  if (post) asio::post(executor_, [this] { flush(); });
  while (!slot->done) (void)co_await slot->wake.async_wait(asio::as_tuple(asio::use_awaitable));
  co_return slot->status;
}

void GroupCommit::flush() {
  std::vector<std::shared_ptr<Slot>> batch;
  bool again = false;
  {
    std::lock_guard lock(mutex_);
    while (!queue_.empty() && batch.size() < kMaxBatch) {
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    again = flush_posted_ = !queue_.empty();
  }
  if (again) asio::post(executor_, [this] { flush(); });
  Status outcome;
  {
    Transaction tx(db_);
    if (!tx.begun()) {
      outcome = tx.begun();
    } else {
      ++batches_;
      for (auto& slot : batch) {
        ++jobs_;
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
  // One hand-back per caller's executor, whatever the number of callers on it.
  std::vector<std::pair<asio::any_io_executor, std::vector<std::shared_ptr<Slot>>>> by_caller;
  for (auto& slot : batch) {
    if (!outcome) slot->status = outcome;
    slot->job = nullptr;  // what it captured goes now, on this thread, not when the caller resumes
    auto it = std::find_if(by_caller.begin(), by_caller.end(), [&](const auto& c) { return c.first == slot->caller; });
    if (it == by_caller.end()) it = by_caller.insert(by_caller.end(), {slot->caller, {}});
    it->second.push_back(std::move(slot));
  }
  for (auto& [caller, slots] : by_caller)
    asio::post(caller, [slots = std::move(slots)] {
      for (const auto& slot : slots) {
        slot->done = true;
        slot->wake.cancel();
      }
    });
}

}  // namespace tsum::daemon
