// SocketWriter: the StreamWriter over a connection's stream (beast::tcp_stream or an ssl_stream over one).
// Each write sets its own deadline on the underlying TCP stream; an expired deadline closes the socket.
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/stream_traits.hpp>

#include <chrono>
#include <string_view>

#include "api/http/http_types.h"

namespace tsum::api {

template <class Stream>
class SocketWriter final : public StreamWriter {
 public:
  // `stream` must outlive the writer.
  explicit SocketWriter(Stream& stream) : stream_(stream) {}

  boost::asio::awaitable<bool> write(std::string_view data, std::chrono::milliseconds timeout) override {
    boost::beast::get_lowest_layer(stream_).expires_after(timeout);
    auto [ec, n] = co_await boost::asio::async_write(stream_, boost::asio::buffer(data.data(), data.size()),
                                                     boost::asio::as_tuple(boost::asio::use_awaitable));
    co_return !ec;
  }

 private:
  Stream& stream_;
};

}  // namespace tsum::api
