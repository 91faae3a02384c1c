#include "api/http/session_support.h"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/field.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <filesystem>
#include <random>
#include <vector>

namespace tsum::api {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;

constexpr std::size_t kFileChunk = 64 * 1024;

bool is_token_char(char c) {
  if (std::isalnum(static_cast<unsigned char>(c))) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool valid_header_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), is_token_char);
}

bool valid_header_value(std::string_view value) {
  return value.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

// Random per process, so upload names never collide with files a previous daemon left behind.
const std::string& process_nonce() {
  static const std::string nonce = [] {
    std::random_device rd;
    std::uint64_t v = (std::uint64_t{rd()} << 32) ^ rd();
    char hex[17];
    for (int i = 15; i >= 0; --i, v >>= 4) hex[i] = "0123456789abcdef"[v & 0xf];
    hex[16] = '\0';
    return std::string(hex);
  }();
  return nonce;
}

}  // namespace

bool fill_head(http::response_header<>& head, const Response& res, const std::string& server_name) {
  if (res.status < 200 || res.status > 599) return false;
  if (!valid_header_value(res.content_type) || !valid_header_value(server_name)) return false;
  head.result(static_cast<unsigned>(res.status));
  head.set(http::field::server, server_name);
  head.set(http::field::content_type, res.content_type);
  for (const auto& [name, value] : res.headers) {
    if (!valid_header_name(name) || !valid_header_value(value)) return false;
    if (beast::iequals(name, "content-length") || beast::iequals(name, "transfer-encoding") ||
        beast::iequals(name, "connection")) {
      continue;  // owned by the server
    }
    if (beast::iequals(name, "content-type") || beast::iequals(name, "server")) {
      head.set(beast::string_view(name), value);
    } else {
      head.insert(beast::string_view(name), value);
    }
  }
  return true;
}

Response invalid_response() {
  return error_response(500, "internal", "handler produced an invalid response (status or header)");
}

bool is_http_error(beast::error_code ec) {
  static const beast::error_category& category = http::make_error_code(http::error::bad_method).category();
  return ec.category() == category;
}

bool open_file_body(const FileBody& body, beast::file& file) {
  beast::error_code ec;
  file.open(body.path.c_str(), beast::file_mode::read, ec);
  if (ec) return false;
  const std::uint64_t size = file.size(ec);
  if (ec || size < body.offset || size - body.offset < body.length) return false;
  file.seek(body.offset, ec);
  return !ec;
}

boost::asio::awaitable<bool> send_file_body(StreamWriter& out, beast::file& file, std::uint64_t length,
                                            std::chrono::milliseconds timeout) {
  std::vector<char> chunk(static_cast<std::size_t>(std::min<std::uint64_t>(kFileChunk, length)));
  while (length > 0) {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size(), length));
    beast::error_code ec;
    const std::size_t got = file.read(chunk.data(), want, ec);
    if (ec || got == 0) co_return false;  // read error, or the file shrank since it was opened
    if (!co_await out.write(std::string_view(chunk.data(), got), timeout)) co_return false;
    length -= got;
  }
  co_return true;
}

std::optional<boost::asio::ip::tcp::socket> move_socket(boost::asio::ip::tcp::socket& socket,
                                                        const boost::asio::any_io_executor& executor) {
  boost::system::error_code ec;
  const auto protocol = socket.local_endpoint(ec).protocol();
  const int fd = ec ? -1 : socket.release(ec);
  if (ec || fd < 0) return std::nullopt;
  boost::asio::ip::tcp::socket moved(executor);
  moved.assign(protocol, fd, ec);
  if (ec) {
    ::close(fd);
    return std::nullopt;
  }
  return moved;
}

Result<std::string> new_upload_path(const std::string& dir) {
  if (dir.empty()) return make_error(Code::invalid_argument, "no upload directory configured (ServerOptions::upload_dir)");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return make_error(Code::internal, "cannot create upload directory " + dir + ": " + ec.message());
  static std::atomic<std::uint64_t> counter{0};
  const std::string name = "upload-" + std::to_string(::getpid()) + "-" + process_nonce() + "-" +
                           std::to_string(counter.fetch_add(1)) + ".part";
  return (std::filesystem::path(dir) / name).string();
}

}  // namespace tsum::api
