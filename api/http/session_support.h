// Helpers of HttpSession that do not depend on the stream type: response heads, file bodies, upload files.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/file.hpp>
#include <boost/beast/http/message.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "api/http/http_types.h"
#include "common/result.h"

namespace tsum::api {

// The completion token of the server's coroutines: an operation answers (error, values...) instead of throwing.
inline constexpr auto kUseTuple = boost::asio::as_tuple(boost::asio::use_awaitable);

// Copies status and headers of `res` into `head` (Server, Content-Type, then res.headers; the framing headers
// Content-Length, Transfer-Encoding and Connection are skipped). False when `res` is unsendable: a status
// outside 200..599, a header name that is not a token, a value with CR, LF or NUL.
bool fill_head(boost::beast::http::response_header<>& head, const Response& res, const std::string& server_name);

// The 500 sent instead of an unsendable response.
Response invalid_response();

// True for Beast's HTTP parse errors (answered 400), false for network errors.
bool is_http_error(boost::beast::error_code ec);

// Opens `body.path` positioned at body.offset. False when it cannot be opened or holds fewer than
// offset + length bytes.
bool open_file_body(const FileBody& body, boost::beast::file& file);

// Sends `length` bytes of `file` from its current position through `out`, in chunks of 64 KiB, each write
// within `timeout`. False on a read error, a short file or a failed write.
boost::asio::awaitable<bool> send_file_body(StreamWriter& out, boost::beast::file& file, std::uint64_t length,
                                            std::chrono::milliseconds timeout);

// The same connection as `socket`, re-opened on `executor` (another thread's io_context); `socket` is left
// closed. nullopt when the peer is already gone (the descriptor is then closed).
std::optional<boost::asio::ip::tcp::socket> move_socket(boost::asio::ip::tcp::socket& socket,
                                                        const boost::asio::any_io_executor& executor);

// Creates `dir` if missing and returns a fresh path inside it that no other upload uses (the file itself is
// not created). invalid_argument when `dir` is empty, internal when it cannot be created.
Result<std::string> new_upload_path(const std::string& dir);

}  // namespace tsum::api
