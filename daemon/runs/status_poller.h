// StatusPoller asks one provider about every instance watched on it with a single describe_many call per
// interval, and hands each watcher the status of its own instance. The run manager keeps one per provider,
// so N live runs on a provider cost one poll (for a cloud: one list call) per interval, not N.
//
// The poll loop runs while something is watched: watch() starts it, and it ends by itself after the last
// unwatch(). A new watch gets its first status at the next poll (within one interval and a call). A watcher
// removed while a poll is in flight hears nothing from that poll. A describe_many that throws (or answers
// too few statuses) gives the watchers an internal error, and the polling goes on. Not thread-safe: use it
// from the io_context's thread. The provider must outlive every poll that started (the run manager's
// shutdown waits for its live runs, which unwatch as they end).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>

#include "providers/provider.h"

namespace tsum::daemon {

class StatusPoller : public std::enable_shared_from_this<StatusPoller> {
 public:
  using Deliver = std::function<void(const Result<providers::InstanceStatus>&)>;

  // Use make(): the poll loop keeps the poller alive through a shared_ptr.
  static std::shared_ptr<StatusPoller> make(boost::asio::io_context& io, providers::Provider& provider,
                                            std::chrono::milliseconds interval);

  // Watches `handle` for `key` (a run id) until unwatch(key): after each poll, `deliver` gets its status on
  // the io_context. Watching a key again replaces its handle and callback.
  void watch(int64_t key, providers::InstanceHandle handle, Deliver deliver);
  void unwatch(int64_t key);

  size_t watched() const { return watched_.size(); }
  // describe_many calls started so far.
  int64_t polls() const { return polls_; }

 private:
  struct Watch {
    providers::InstanceHandle handle;
    Deliver deliver;
    uint64_t serial;  // tells a re-watch from the watch a poll in flight was for
  };
  StatusPoller(boost::asio::io_context& io, providers::Provider& provider, std::chrono::milliseconds interval);
  boost::asio::awaitable<void> loop();

  boost::asio::io_context& io_;
  providers::Provider& provider_;
  std::chrono::milliseconds interval_;
  std::map<int64_t, Watch> watched_;
  boost::asio::steady_timer wait_;
  bool running_ = false;
  uint64_t next_serial_ = 0;
  int64_t polls_ = 0;
};

}  // namespace tsum::daemon
