#include "workload/infer/http_client.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <future>
#include <optional>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

namespace tsum::workload::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

// The process's client loop: one thread runs every Connection's socket.
class Loop {
 public:
  Loop() : guard_(asio::make_work_guard(ioc_)), thread_([this] { ioc_.run(); }) {}
  ~Loop() {
    guard_.reset();
    ioc_.stop();
    thread_.join();
  }
  asio::io_context& ioc() { return ioc_; }

  // Runs `f` on the loop's thread and waits for what it hands to its `done` (f(done) must call done once).
  template <class T, class F>
  T run(F f) {
    // The promise is shared: the waiting thread may wake and return while set_value is still finishing.
    auto promise = std::make_shared<std::promise<T>>();
    auto future = promise->get_future();
    asio::post(ioc_, [promise, f = std::move(f)]() mutable { f([promise](T value) { promise->set_value(std::move(value)); }); });
    return future.get();
  }

 private:
  asio::io_context ioc_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  std::thread thread_;
};

Loop& loop() {
  static Loop instance;
  return instance;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

Error failed(const beast::error_code& ec, std::string_view what) {
  // A response Beast cannot parse is the server's fault in its bytes; a connection that ends is unavailable.
  const auto& http_errors = beast::error_code(bhttp::error::end_of_stream).category();
  const Code code = ec == beast::error::timeout ? Code::timeout
                    : ec.category() == http_errors && ec != bhttp::error::end_of_stream ? Code::invalid_argument
                                                                                        : Code::unavailable;
  return make_error(code, std::string(what) + ": " + ec.message());
}

}  // namespace

const std::string* Response::header(std::string_view lower_name) const {
  for (const auto& [name, value] : headers)
    if (name == lower_name) return &value;
  return nullptr;
}

Result<Url> parse_url(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  if (url.substr(0, kScheme.size()) != kScheme)
    return make_error(Code::invalid_argument, "expected an http:// URL, got '" + std::string(url) + "'");
  auto rest = url.substr(kScheme.size());
  rest = rest.substr(0, rest.find('/'));
  Url out;
  const auto colon = rest.rfind(':');
  out.host = std::string(rest.substr(0, colon));
  if (colon != std::string_view::npos) {
    const auto port = rest.substr(colon + 1);
    const auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), out.port);
    if (port.empty() || ec != std::errc() || ptr != port.data() + port.size() || out.port < 1 || out.port > 65535)
      return make_error(Code::invalid_argument, "bad port in '" + std::string(url) + "'");
  }
  if (out.host.empty()) return make_error(Code::invalid_argument, "no host in '" + std::string(url) + "'");
  return out;
}

Request make_request(std::string_view method, std::string_view target, std::string_view host,
                     std::string_view content_type, std::string body,
                     const std::vector<std::pair<std::string, std::string>>& headers) {
  Request r;
  r.method_string(method);
  r.target(target);
  r.version(11);
  r.set(bhttp::field::host, host);
  if (!content_type.empty()) r.set(bhttp::field::content_type, content_type);
  for (const auto& [name, value] : headers) r.set(name, value);
  const bool has_body = !body.empty() || method == "POST" || method == "PUT";
  r.body() = std::move(body);
  if (has_body) r.prepare_payload();
  return r;
}

struct Connection::Impl {
  Url url;  // host empty: never opened
  std::unique_ptr<beast::tcp_stream> stream;  // touched on the loop's thread only
  beast::flat_buffer buffer;
  std::optional<bhttp::response_parser<bhttp::string_body>> parser;
};

Connection::Connection() : impl_(std::make_unique<Impl>()) {}

Connection::~Connection() { close(); }

bool Connection::is_open() const { return impl_->stream != nullptr; }

void Connection::close() {
  if (!impl_->stream) return;
  loop().run<bool>([this](auto done) {
    beast::error_code ignored;
    impl_->stream->socket().shutdown(tcp::socket::shutdown_both, ignored);
    impl_->stream.reset();
    impl_->buffer.clear();
    done(true);
  });
}

Status Connection::open(const Url& url, std::chrono::milliseconds timeout) {
  close();
  impl_->url = url;
  const std::string where = url.host + ":" + std::to_string(url.port);
  beast::error_code ec;
  tcp::resolver resolver(loop().ioc());
  const auto endpoints = resolver.resolve(url.host, std::to_string(url.port), ec);
  if (ec) return make_error(Code::unavailable, "cannot resolve " + where + ": " + ec.message());
  ec = loop().run<beast::error_code>([&](auto done) {
    impl_->stream = std::make_unique<beast::tcp_stream>(loop().ioc());
    impl_->stream->expires_after(timeout);
    impl_->stream->async_connect(endpoints, [this, done](beast::error_code e, const tcp::endpoint&) {
      if (!e) impl_->stream->socket().set_option(tcp::no_delay(true), e);
      if (e) impl_->stream.reset();
      done(e);
    });
  });
  if (ec) return failed(ec, "cannot connect to " + where);
  return {};
}

Result<Response> Connection::round_trip(const Request& request, std::chrono::milliseconds timeout) {
  if (!is_open()) {
    if (impl_->url.host.empty()) return make_error(Code::unavailable, "the connection was never opened");
    if (auto st = open(impl_->url, timeout); !st.ok()) return st.error();
  }
  const beast::error_code ec = loop().run<beast::error_code>([&](auto done) {
    impl_->stream->expires_after(timeout);
    bhttp::async_write(*impl_->stream, request, [this, done](beast::error_code e, std::size_t) {
      if (e) return done(e);
      impl_->parser.emplace();
      impl_->parser->header_limit(64 * 1024);
      impl_->parser->body_limit(std::uint64_t{1} << 30);
      bhttp::async_read(*impl_->stream, impl_->buffer, *impl_->parser,
                        [done](beast::error_code e2, std::size_t) { done(e2); });
    });
  });
  if (ec) {
    close();
    return failed(ec, "round trip to " + impl_->url.host + ":" + std::to_string(impl_->url.port));
  }
  auto message = impl_->parser->release();
  Response r;
  r.status = static_cast<int>(message.result_int());
  for (const auto& field : message) r.headers.emplace_back(lower(field.name_string()), std::string(field.value()));
  r.body = std::move(message.body());
  if (!message.keep_alive()) close();
  return r;
}

}  // namespace tsum::workload::http
