#include "api/http/http_server.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include <openssl/ssl.h>

#include "api/http/http_session.h"
#include "api/http/session_support.h"

namespace tsum::api {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace ssl = asio::ssl;
using asio::awaitable;
using asio::ip::tcp;

namespace {
// Pause after a failed accept (e.g. out of file descriptors) so the loop does not spin.
constexpr std::chrono::milliseconds kAcceptBackoff{100};

// A connection over the cap with none idle to make room for it: answered at once, without reading its request.
void refuse_busy(tcp::socket& socket) {
  static const std::string kBody =
      R"({"error":"unavailable","detail":"the daemon has as many connections open as it may; retry shortly"})";
  static const std::string kResponse = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                                       "Retry-After: 1\r\nConnection: close\r\nContent-Length: " +
                                       std::to_string(kBody.size()) + "\r\n\r\n" + kBody;
  boost::system::error_code ec;
  socket.non_blocking(true, ec);
  socket.write_some(asio::buffer(kResponse), ec);  // a fresh socket's send buffer takes it whole
  socket.shutdown(tcp::socket::shutdown_both, ec);
  socket.close(ec);
}
}  // namespace

std::size_t open_files_cap(std::uint64_t soft) {
  const std::uint64_t reserve = soft > 1024 ? 256 : soft / 4;
  return static_cast<std::size_t>(std::max<std::uint64_t>(1, soft - std::min(soft, reserve)));
}

std::uint64_t raise_open_files_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return 1024;
  rlim_t want = lim.rlim_max;
  if (want == RLIM_INFINITY) {  // the kernel refuses more than fs.nr_open
    want = 1 << 20;
    std::ifstream in("/proc/sys/fs/nr_open");
    if (rlim_t n = 0; in >> n && n > 0) want = n;
  }
  if (want > lim.rlim_cur) {
    rlimit raised{want, lim.rlim_max};
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) lim.rlim_cur = want;
  }
  return lim.rlim_cur;
}

// Shared by the HttpServer and its coroutines. Connections live on `nets` (just `io` unless the server was given
// network io_contexts, each run by one thread): the acceptor on the first, each connection on one of them in
// turn. `sessions` is shared across them under `mutex`.
struct HttpServer::State {
  State(asio::io_context& io, const Router& router, ServerOptions opts, std::vector<asio::io_context*> network)
      : io(io),
        nets(network.empty() || !opts.tls_cert_file.empty() || !opts.tls_key_file.empty()
                 ? std::vector<asio::io_context*>{&io}
                 : std::move(network)),
        router(router),
        opts(std::move(opts)),
        acceptor(*nets.front()),
        backoff(*nets.front()) {
    if (this->opts.max_connections == 0) {
      rlimit lim{};
      this->opts.max_connections = open_files_cap(getrlimit(RLIMIT_NOFILE, &lim) == 0 ? lim.rlim_cur : 1024);
    }
  }

  // The executor the routes run on when connections live on other threads; empty otherwise.
  asio::any_io_executor handlers() const {
    return nets.front() == &io ? asio::any_io_executor() : asio::any_io_executor(io.get_executor());
  }

  // On the acceptor's io_context.
  void stop() {
    if (stopped.exchange(true)) return;
    boost::system::error_code ec;
    acceptor.close(ec);
    backoff.cancel();
    std::lock_guard lock(mutex);
    for (auto& [id, open] : sessions) asio::post(open.executor, open.close);  // they unregister themselves later
  }

  // At the cap: closes the connection idle the longest (on its own thread). False when none is idle.
  bool make_room() {
    for (int tries = 0; tries < 3; ++tries) {
      std::shared_ptr<std::atomic<std::int64_t>> oldest;
      std::int64_t since = 0;
      asio::any_io_executor where;
      std::function<void()> close;
      {
        std::lock_guard lock(mutex);
        for (auto& [id, open] : sessions) {
          const std::int64_t t = open.idle_since->load();
          if (t != 0 && (since == 0 || t < since)) {
            since = t;
            oldest = open.idle_since;
            where = open.executor;
            close = open.close;
          }
        }
      }
      if (!oldest) return false;
      // Taken only if it is still idle since then; a request that began meanwhile is left to finish.
      if (oldest->compare_exchange_strong(since, 0)) {
        asio::post(where, close);
        return true;
      }
    }
    return false;
  }

  // Loads the certificate chain and key of ServerOptions into `tls`; invalid_argument naming the file.
  Status load_tls();

  // Accepts until stop(); spawns serve_session per connection.
  static awaitable<void> accept_loop(std::shared_ptr<State> state);
  // Runs one connection (plain or TLS, after ServerOptions) and keeps it in `sessions` while it is open.
  static awaitable<void> serve_session(std::shared_ptr<State> state, tcp::socket socket);
  template <class Session>
  static awaitable<void> run_session(std::shared_ptr<State> state, std::shared_ptr<Session> session);

  asio::io_context& io;
  std::vector<asio::io_context*> nets;
  std::size_t next_net = 0;  // the acceptor's
  const Router& router;
  ServerOptions opts;
  tcp::acceptor acceptor;
  asio::steady_timer backoff;
  std::optional<ssl::context> tls;  // set by listen() when ServerOptions names a certificate and key
  struct Open {
    asio::any_io_executor executor;  // the session's io_context
    std::function<void()> close;     // to run there
    std::shared_ptr<std::atomic<std::int64_t>> idle_since;  // HttpSession::idle_since()
  };
  std::mutex mutex;  // guards sessions and next_session_id
  std::unordered_map<std::uint64_t, Open> sessions;
  std::uint64_t next_session_id = 0;
  std::atomic<std::size_t> open_sessions{0};
  std::atomic<bool> stopped{false};
  bool accepting = false;
};

awaitable<void> HttpServer::State::accept_loop(std::shared_ptr<State> state) {
  while (!state->stopped) {
    auto [ec, socket] = co_await state->acceptor.async_accept(kUseTuple);
    if (state->stopped) break;
    if (ec) {
      if (ec == asio::error::operation_aborted || !state->acceptor.is_open()) break;
      if (ec == asio::error::no_descriptors) state->make_room();  // out of files all the same: free one
      state->backoff.expires_after(kAcceptBackoff);
      co_await state->backoff.async_wait(kUseTuple);
      continue;
    }
    if (state->open_sessions >= state->opts.max_connections && !state->make_room()) {
      refuse_busy(socket);
      continue;
    }
    // The next network io_context in turn takes the connection (re-opened there when it is not the acceptor's).
    asio::io_context& home = *state->nets[state->next_net++ % state->nets.size()];
    if (&home != state->nets.front()) {
      auto moved = move_socket(socket, home.get_executor());
      if (!moved) continue;  // the peer is gone
      socket = std::move(*moved);
    }
    asio::co_spawn(home, serve_session(state, std::move(socket)), asio::detached);
  }
}

awaitable<void> HttpServer::State::serve_session(std::shared_ptr<State> state, tcp::socket socket) {
  if (state->stopped) co_return;  // `socket` closes as the frame ends
  if (state->tls) {
    beast::ssl_stream<beast::tcp_stream> stream(std::move(socket), *state->tls);
    co_await run_session(state, std::make_shared<TlsHttpSession>(std::move(stream), state->router, state->opts,
                                                                 state->handlers()));
  } else {
    beast::tcp_stream stream(std::move(socket));
    co_await run_session(state, std::make_shared<PlainHttpSession>(std::move(stream), state->router, state->opts,
                                                                   state->handlers()));
  }
}

template <class Session>
awaitable<void> HttpServer::State::run_session(std::shared_ptr<State> state, std::shared_ptr<Session> session) {
  std::uint64_t id = 0;
  {
    const auto executor = co_await asio::this_coro::executor;
    std::lock_guard lock(state->mutex);
    id = state->next_session_id++;
    state->sessions.emplace(id, Open{executor, [session] { session->close(); }, session->idle_since()});
  }
  ++state->open_sessions;
  if (state->stopped) session->close();  // stop() ran between accept and here
  try {
    co_await session->run();
  } catch (...) {
    // run() does not throw; this guards the registry below against a future change.
  }
  session->close();
  {
    std::lock_guard lock(state->mutex);
    state->sessions.erase(id);
  }
  --state->open_sessions;
}

Status HttpServer::State::load_tls() {
  if (opts.tls_cert_file.empty() != opts.tls_key_file.empty()) {
    return make_error(Code::invalid_argument, "TLS needs both a certificate and a key file (got only " +
                                                  (opts.tls_cert_file.empty() ? "key '" + opts.tls_key_file
                                                                              : "certificate '" + opts.tls_cert_file) +
                                                  "')");
  }
  if (opts.tls_cert_file.empty()) return {};
  ssl::context context(ssl::context::tls_server);
  context.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                      ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use);
  SSL_CTX_set_min_proto_version(context.native_handle(), TLS1_2_VERSION);
  boost::system::error_code ec;
  context.use_certificate_chain_file(opts.tls_cert_file, ec);
  if (ec) {
    return make_error(Code::invalid_argument, "cannot load TLS certificate '" + opts.tls_cert_file + "': " + ec.message());
  }
  context.use_private_key_file(opts.tls_key_file, ssl::context::pem, ec);
  if (ec) return make_error(Code::invalid_argument, "cannot load TLS key '" + opts.tls_key_file + "': " + ec.message());
  if (SSL_CTX_check_private_key(context.native_handle()) != 1) {
    return make_error(Code::invalid_argument, "TLS key '" + opts.tls_key_file + "' does not match certificate '" +
                                                  opts.tls_cert_file + "'");
  }
  tls.emplace(std::move(context));
  return {};
}

HttpServer::HttpServer(asio::io_context& io, const Router& router, ServerOptions opts,
                       std::vector<asio::io_context*> network)
    : state_(std::make_shared<State>(io, router, std::move(opts), std::move(network))) {}

HttpServer::~HttpServer() { state_->stop(); }

Result<std::uint16_t> HttpServer::listen(const std::string& host, std::uint16_t port) {
  if (state_->stopped) return make_error(Code::cancelled, "server is stopped");
  if (state_->acceptor.is_open()) return make_error(Code::already_exists, "server is already listening");
  if (Status st = state_->load_tls(); !st) return st.error();

  boost::system::error_code ec;
  tcp::resolver resolver(state_->io);
  auto results = resolver.resolve(host, std::to_string(port), tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || results.empty()) {
    return make_error(Code::invalid_argument, "cannot resolve listen host '" + host + "': " + ec.message());
  }
  const tcp::endpoint endpoint = results.begin()->endpoint();
  const std::string where = endpoint.address().to_string() + ":" + std::to_string(port);

  tcp::acceptor& acceptor = state_->acceptor;
  auto fail = [&](const char* step) {
    boost::system::error_code ignored;
    acceptor.close(ignored);
    return make_error(Code::unavailable, std::string(step) + " " + where + ": " + ec.message());
  };
  acceptor.open(endpoint.protocol(), ec);
  if (ec) return fail("open");
  acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (ec) return fail("set SO_REUSEADDR on");
  acceptor.bind(endpoint, ec);
  if (ec) return fail("bind");
  acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return fail("listen on");
  const tcp::endpoint bound = acceptor.local_endpoint(ec);
  if (ec) return fail("get local endpoint of");

  if (!state_->handlers()) accept();
  return bound.port();
}

void HttpServer::accept() {
  if (state_->accepting || !state_->acceptor.is_open()) return;
  state_->accepting = true;
  asio::co_spawn(*state_->nets.front(), State::accept_loop(state_), asio::detached);
}

void HttpServer::stop() {
  asio::dispatch(*state_->nets.front(), [state = state_] { state->stop(); });
}

std::size_t HttpServer::connection_count() const { return state_->open_sessions; }

}  // namespace tsum::api
