#include "daemon/runs/run_watch.h"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace tsum::daemon {

namespace asio = boost::asio;

void RunWatch::notify(int64_t run_id) {
  versions_.put(run_id, ++next_version_);
  auto [first, last] = waiters_.equal_range(run_id);
  for (auto it = first; it != last; ++it) it->second->cancel();
}

uint64_t RunWatch::version(int64_t run_id) const {
  const uint64_t* held = versions_.find(run_id);
  return held ? *held : 0;
}

asio::awaitable<RunWatch::Wake> RunWatch::wait(int64_t run_id, uint64_t seen, std::chrono::milliseconds timeout) {
  if (closed_) co_return Wake::closed;
  if (version(run_id) != seen) co_return Wake::changed;
  asio::steady_timer timer(executor_, timeout);
  auto parked = waiters_.emplace(run_id, &timer);
  boost::system::error_code ec;
  co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  waiters_.erase(parked);
  if (closed_) co_return Wake::closed;
  if (version(run_id) != seen) co_return Wake::changed;
  co_return Wake::timeout;
}

void RunWatch::close() {
  closed_ = true;
  for (auto& [id, timer] : waiters_) timer->cancel();
}

}  // namespace tsum::daemon
