#include "daemon/runs/status_poller.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <exception>
#include <string>
#include <vector>

namespace tsum::daemon {

namespace asio = boost::asio;

std::shared_ptr<StatusPoller> StatusPoller::make(asio::io_context& io, providers::Provider& provider,
                                                 std::chrono::milliseconds interval) {
  return std::shared_ptr<StatusPoller>(new StatusPoller(io, provider, interval));
}

StatusPoller::StatusPoller(asio::io_context& io, providers::Provider& provider, std::chrono::milliseconds interval)
    : io_(io), provider_(provider), interval_(interval), wait_(io) {}

void StatusPoller::watch(int64_t key, providers::InstanceHandle handle, Deliver deliver) {
  watched_[key] = Watch{std::move(handle), std::move(deliver), next_serial_++};
  if (running_) return;
  running_ = true;
  asio::co_spawn(io_, [self = shared_from_this()]() -> asio::awaitable<void> { co_await self->loop(); },
                 asio::detached);
}

void StatusPoller::unwatch(int64_t key) { watched_.erase(key); }

asio::awaitable<void> StatusPoller::loop() {
  while (!watched_.empty()) {
    std::vector<int64_t> keys;
    std::vector<uint64_t> serials;
    std::vector<providers::InstanceHandle> handles;
    for (const auto& [key, w] : watched_) {
      keys.push_back(key);
      serials.push_back(w.serial);
      handles.push_back(w.handle);
    }
    ++polls_;
    std::vector<Result<providers::InstanceStatus>> statuses;
    std::string thrown;
    try {  // an exception must not end the loop: every watcher would go unheard
      statuses = co_await provider_.describe_many(handles);
    } catch (const std::exception& e) {
      thrown = e.what();
    }
    if (!thrown.empty()) statuses.clear();
    for (size_t i = 0; i < keys.size(); ++i) {
      auto it = watched_.find(keys[i]);
      if (it == watched_.end() || it->second.serial != serials[i]) continue;  // unwatched meanwhile
      // A provider that threw, or answered fewer statuses than handles, fails the rest rather than leaving
      // them unheard.
      Result<providers::InstanceStatus> status =
          i < statuses.size()
              ? statuses[i]
              : Result<providers::InstanceStatus>(make_error(
                    Code::internal, std::string(provider_.name()) + ": describe_many " +
                                        (thrown.empty() ? "answered " + std::to_string(statuses.size()) + " of " +
                                                              std::to_string(keys.size()) + " instances"
                                                        : "threw: " + thrown)));
      auto deliver = it->second.deliver;  // a copy: the callback may unwatch
      deliver(status);
    }
    if (watched_.empty()) break;
    wait_.expires_after(interval_);
    boost::system::error_code ec;
    co_await wait_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  running_ = false;
}

}  // namespace tsum::daemon
