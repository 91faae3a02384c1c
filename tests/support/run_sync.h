// Runs one coroutine to completion on a private io_context, for tests of async code.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <optional>

namespace tsum::testing {

template <class T>
T run_sync(boost::asio::awaitable<T> task) {
  boost::asio::io_context io;
  std::optional<T> out;
  boost::asio::co_spawn(
      io, [&]() -> boost::asio::awaitable<void> { out.emplace(co_await std::move(task)); }, boost::asio::detached);
  io.run();
  return std::move(*out);
}

}  // namespace tsum::testing
