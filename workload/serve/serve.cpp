#include "workload/serve/serve.h"

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <nlohmann/json.hpp>

#include "workload/machine/host_stats.h"
#include "workload/serve/infer_protocol.h"
#include "workload/infer/jpeg.h"
#include "workload/machine/nvml.h"

namespace tsum::workload {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using Request = bhttp::request<RequestBody>;
using Answer = bhttp::response<bhttp::string_body>;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

constexpr std::int64_t kMaxElements = std::int64_t{1} << 28;
constexpr std::size_t kReadChunk = 64 * 1024;
constexpr std::chrono::seconds kWriteTimeout{30};
constexpr std::chrono::seconds kLingerTime{2};
constexpr std::size_t kLingerBytes = std::size_t{256} << 20;

Answer make_answer(int status, std::string_view content_type, std::string body) {
  Answer a{static_cast<bhttp::status>(status), 11};
  a.set(bhttp::field::content_type, content_type);
  a.body() = std::move(body);
  return a;
}

Answer json_answer(int status, const json& body) { return make_answer(status, "application/json", body.dump()); }

Answer error_answer(int status, std::string_view message) {
  return make_answer(status, "application/json", v2::error_body(message));
}

// "/v2/models/{m}[/versions/1][/rest]" -> {m, rest}; nullopt for another path or version.
std::optional<std::pair<std::string, std::string>> model_path(std::string_view path) {
  constexpr std::string_view kPrefix = "/v2/models/";
  if (path.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  path.remove_prefix(kPrefix.size());
  const auto slash = path.find('/');
  std::string model(path.substr(0, slash));
  std::string rest(slash == std::string_view::npos ? "" : path.substr(slash));
  constexpr std::string_view kVersion = "/versions/";
  if (rest.rfind(kVersion, 0) == 0) {
    const auto end = rest.find('/', kVersion.size());
    if (rest.substr(kVersion.size(), end == std::string::npos ? end : end - kVersion.size()) != "1")
      return std::nullopt;
    rest = end == std::string::npos ? "" : rest.substr(end);
  }
  if (model.empty()) return std::nullopt;
  return std::pair{std::move(model), std::move(rest)};
}

json model_metadata(const ModelIo& io, const Batcher::Config& batching) {
  return {{"name", io.name},
          {"versions", {"1"}},
          {"platform", io.platform},
          {"inputs",
           {{{"name", "input"}, {"datatype", "FP32"}, {"shape", {-1, io.channels, io.height, io.width}}},
            {{"name", "image"}, {"datatype", "BYTES"}, {"shape", {-1}}}}},
          {"outputs",
           {{{"name", "logits"}, {"datatype", "FP32"}, {"shape", {-1, io.classes}}},
            {{"name", "class"}, {"datatype", "INT64"}, {"shape", {-1}}}}},
          {"parameters",
           {{"max_batch_size", batching.max_batch},
            {"max_queue_delay_us", batching.max_delay.count()},
            {"params", io.params},
            {"device", io.device}}}};
}

// A request's images as n x height x width x channels floats; an error message (a 400) when they are not.
struct Images {
  Floats data;
  std::int64_t n = 0;
  std::string error;
};

Images read_images(const v2::InputTensor& in, const ModelIo& io) {
  Images out;
  const std::int64_t hw = io.height * io.width;
  if (in.name == "input") {
    if (in.datatype != "FP32" || in.shape.size() != 4 || in.shape[1] != io.channels || in.shape[2] != io.height ||
        in.shape[3] != io.width) {
      out.error = "input 'input' must be FP32 [n, " + std::to_string(io.channels) + ", " + std::to_string(io.height) +
                  ", " + std::to_string(io.width) + "]";
      return out;
    }
    out.n = in.shape[0];
    out.data.resize(in.fp32.size());
    // NCHW (what clients send) to channels-last (what the model runs on).
    for (std::int64_t i = 0; i < out.n; ++i) {
      const float* src = in.fp32.data() + i * io.channels * hw;
      float* dst = out.data.data() + i * io.channels * hw;
      for (std::int64_t c = 0; c < io.channels; ++c)
        for (std::int64_t p = 0; p < hw; ++p) dst[p * io.channels + c] = src[c * hw + p];
    }
    return out;
  }
  if (in.name == "image") {
    if (in.datatype != "BYTES" || in.shape.size() != 1) {
      out.error = "input 'image' must be BYTES [n], a JPEG per element";
      return out;
    }
    out.n = in.shape[0];
    out.data.resize(static_cast<std::size_t>(out.n * io.image_floats()));
    for (std::int64_t i = 0; i < out.n; ++i) {
      const std::string what = "image " + std::to_string(i);
      auto image = decode_jpeg(in.bytes[static_cast<std::size_t>(i)], what);
      if (!image.ok()) {
        out.error = image.error().detail;
        return out;
      }
      if (image->width != io.width || image->height != io.height) {
        out.error = what + " is " + std::to_string(image->width) + "x" + std::to_string(image->height) +
                    ", the model reads " + std::to_string(io.width) + "x" + std::to_string(io.height);
        return out;
      }
      normalize_image(*image, static_cast<int>(io.channels), out.data.data() + i * io.image_floats());
    }
    return out;
  }
  out.error = "unknown input '" + in.name + "' (the model reads 'input', FP32, or 'image', BYTES)";
  return out;
}

// Runs `images` through the batcher and resumes the awaiting coroutine on its own executor with the result: the
// batcher's thread only posts it there. A full queue (or a stopping batcher) is an unavailable result at once.
template <class Token>
auto async_run_batch(Batcher& batcher, Floats images, std::int64_t n, Token&& token) {
  return asio::async_initiate<Token, void(JobResult)>(
      [&batcher](auto handler, Floats images, std::int64_t n) {
        auto ex = asio::get_associated_executor(handler);
        auto shared = std::make_shared<decltype(handler)>(std::move(handler));
        auto done = [shared, ex](JobResult r) {
          asio::post(ex, [shared, r = std::move(r)]() mutable { std::move(*shared)(std::move(r)); });
        };
        if (!batcher.submit(std::move(images), n, done)) {
          JobResult r;
          r.status = make_error(Code::unavailable, "the queue is full");
          done(std::move(r));
        }
      },
      token, std::move(images), n);
}

}  // namespace

struct InferenceServer::Gpu {
  std::unique_ptr<Nvml> nvml;
};

namespace {

// One connection: its stream, on a strand of its own. `idle` (touched on the strand only): waiting for a request
// to begin, so stop() may close it.
struct Session {
  explicit Session(tcp::socket socket) : stream(std::move(socket)) {}
  beast::tcp_stream stream;
  bool idle = true;
};

// A request head being read under its deadline.
struct HeadWatch {
  bool reading = true;
  bool late = false;
};

}  // namespace

struct InferenceServer::Net {
  explicit Net(InferenceServer& s) : server(s), guard(asio::make_work_guard(ioc)), accept_strand(ioc.get_executor()) {}

  InferenceServer& server;
  asio::io_context ioc;
  asio::executor_work_guard<asio::io_context::executor_type> guard;
  asio::strand<asio::io_context::executor_type> accept_strand;  // the acceptor's: accept_loop and stop()'s close
  std::optional<tcp::acceptor> acceptor;
  std::vector<std::thread> threads;
  std::mutex mu;  // sessions: the connections alive; stop() waits for none
  std::condition_variable none_left;
  std::map<std::uint64_t, std::weak_ptr<Session>> sessions;
  std::uint64_t next_id = 0;
  bool accepting = true;  // accept_loop has not returned

  asio::awaitable<void> accept_loop();
  asio::awaitable<void> serve(std::shared_ptr<Session> session, std::uint64_t id);
  asio::awaitable<void> refuse(Session& session, int status, std::string why);
  asio::awaitable<Answer> answer(Request& request);
  asio::awaitable<Answer> infer(Request& request, const std::string& model);
  Answer reject(int status, std::string_view why) {
    ++server.rejected_;
    return error_answer(status, why);
  }
};

InferenceServer::InferenceServer(std::vector<Engine*> engines, ServerConfig config)
    : engine_(*engines.front()),
      config_(std::move(config)),
      batcher_(std::move(engines), config_.batching),
      gpu_(std::make_unique<Gpu>()) {
  if (auto nvml = Nvml::open(); nvml.ok()) gpu_->nvml = std::move(*nvml);
}

InferenceServer::~InferenceServer() { stop(); }

Status InferenceServer::start() {
  auto net = std::make_unique<Net>(*this);
  const std::string where = config_.host + ":" + std::to_string(config_.port);
  beast::error_code ec;
  const auto address = asio::ip::make_address(config_.host, ec);
  if (ec) return make_error(Code::invalid_argument, "cannot listen on " + where + ": not an IP address");
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(config_.port));
  tcp::acceptor& acceptor = net->acceptor.emplace(net->ioc);
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(512, ec);
  if (ec) return make_error(Code::unavailable, "cannot listen on " + where + ": " + ec.message());
  port_ = acceptor.local_endpoint().port();
  net_ = std::move(net);
  asio::co_spawn(net_->accept_strand, net_->accept_loop(), asio::detached);
  const unsigned cpus = std::thread::hardware_concurrency();
  const int threads = config_.io_threads > 0 ? config_.io_threads : static_cast<int>(std::max(2u, cpus));
  for (int i = 0; i < threads; ++i) net_->threads.emplace_back([this] { net_->ioc.run(); });
  return {};
}

void InferenceServer::stop() {
  if (stopping_.exchange(true)) return;
  if (net_) {
    Net& net = *net_;
    asio::post(net.accept_strand, [&net] {
      beast::error_code ignored;
      net.acceptor->close(ignored);
    });
    std::unique_lock lock(net.mu);
    for (auto& [id, weak] : net.sessions) {
      if (auto s = weak.lock()) {
        asio::post(s->stream.get_executor(), [s] {
          if (s->idle) s->stream.socket().cancel();
        });
      }
    }
    // Each busy connection ends after the request it is in (its batch runs: the batcher stops after them).
    net.none_left.wait(lock, [&net] { return net.sessions.empty() && !net.accepting; });
    lock.unlock();
    net.guard.reset();
    net.ioc.stop();
    for (auto& t : net.threads) t.join();
  }
  batcher_.stop();
}

InferenceServer::Stats InferenceServer::stats() const {
  const auto b = batcher_.stats();
  return {requests_.load(), rejected_.load(), b.batches, b.images};
}

asio::awaitable<void> InferenceServer::Net::accept_loop() {
  for (;;) {
    auto strand = asio::make_strand(ioc);
    auto [ec, socket] = co_await acceptor->async_accept(strand, kTuple);
    if (server.stopping_) break;
    if (ec) {
      if (ec == asio::error::operation_aborted) break;
      // Out of files (EMFILE) or the like: a moment for connections to end, not a busy loop.
      asio::steady_timer pause(ioc, std::chrono::milliseconds(50));
      co_await pause.async_wait(kTuple);
      continue;
    }
    socket.set_option(tcp::no_delay(true), ec);
    std::unique_lock lock(mu);
    if (static_cast<int>(sessions.size()) >= server.config_.max_connections) {
      lock.unlock();
      ++server.rejected_;
      Answer busy = error_answer(503, "too many connections");
      busy.keep_alive(false);
      busy.prepare_payload();
      bhttp::write(socket, busy, ec);  // a few hundred bytes: the socket's buffer takes them at once
      socket.close(ec);
      continue;
    }
    const std::uint64_t id = next_id++;
    auto session = std::make_shared<Session>(std::move(socket));
    sessions.emplace(id, session);
    lock.unlock();
    auto ex = session->stream.get_executor();
    asio::co_spawn(ex, serve(std::move(session), id), asio::detached);
  }
  std::lock_guard lock(mu);
  accepting = false;
  none_left.notify_all();
}

asio::awaitable<void> InferenceServer::Net::serve(std::shared_ptr<Session> session, std::uint64_t id) {
  auto& stream = session->stream;
  const ServerConfig& config = server.config_;
  beast::flat_buffer buffer;
  for (;;) {
    if (buffer.size() == 0) {  // waiting for a request: idle until its first byte
      if (server.stopping_) break;
      session->idle = true;
      stream.expires_after(config.idle_timeout);
      auto space = buffer.prepare(kReadChunk);
      auto [ec, n] = co_await stream.async_read_some(space, kTuple);
      session->idle = false;
      if (ec) break;
      buffer.commit(n);
    }
    RequestParser parser;
    apply_limits(parser, config.limits);
    // The head's own deadline cancels the read (a Beast timeout would close the socket before the 408).
    stream.expires_never();
    // Both on the strand: the timer's handler cancels only the read it was set for.
    auto head = std::make_shared<HeadWatch>();
    asio::steady_timer head_timer(stream.get_executor(), config.head_timeout);
    head_timer.async_wait([head, session](beast::error_code e) {
      if (e || !head->reading) return;
      head->late = true;
      session->stream.socket().cancel();
    });
    auto [hec, hn] = co_await bhttp::async_read_header(stream, buffer, parser, kTuple);
    head->reading = false;
    head_timer.cancel();
    if (head->late) {
      std::string why = "the request head did not end in time";
      co_await refuse(*session, 408, std::move(why));
      break;
    }
    if (hec) {
      if (hec != bhttp::error::end_of_stream && hec != asio::error::eof && hec != asio::error::connection_reset) {
        std::string why = hec.message();
        const std::string_view head(static_cast<const char*>(buffer.data().data()), buffer.size());
        co_await refuse(*session, refusal_status(hec, head), std::move(why));
      }
      break;
    }
    // A client that waits for leave to send its body (curl over 1 MiB) gets it as soon as the head is in.
    if (!parser.is_done() && beast::iequals(parser.get()[bhttp::field::expect], "100-continue")) {
      bhttp::response<bhttp::empty_body> go_on{bhttp::status::continue_, 11};
      stream.expires_after(kWriteTimeout);
      auto [ec, n] = co_await bhttp::async_write(stream, go_on, kTuple);
      if (ec) break;
    }
    if (!parser.is_done()) {
      stream.expires_after(config.idle_timeout);
      auto [ec, n] = co_await bhttp::async_read(stream, buffer, parser, kTuple);
      if (ec) {
        if (ec != beast::error::timeout && ec != bhttp::error::partial_message && ec != asio::error::eof &&
            ec != asio::error::connection_reset) {
          std::string why = ec.message();
          co_await refuse(*session, refusal_status(ec), std::move(why));
        }
        break;
      }
    }
    Request request = parser.release();
    const bool keep_alive = request.keep_alive();
    Answer a = co_await answer(request);
    request = {};  // the body's memory, before the answer is written
    a.keep_alive(keep_alive && !server.stopping_);
    a.prepare_payload();
    stream.expires_after(kWriteTimeout);
    auto [wec, wn] = co_await bhttp::async_write(stream, a, kTuple);
    if (wec || !a.keep_alive()) break;
  }
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  stream.close();
  std::lock_guard lock(mu);
  sessions.erase(id);
  if (sessions.empty()) none_left.notify_all();
}

// Answers `status` and closes as web servers' lingering close does: the client may still be sending (a body over
// the limit), and closing a socket with unread bytes resets the connection, losing the answer with it. So stop
// sending, read what comes for a while (kLingerTime, kLingerBytes), then close.
asio::awaitable<void> InferenceServer::Net::refuse(Session& session, int status, std::string why) {
  ++server.rejected_;
  Answer a = error_answer(status, why);
  a.keep_alive(false);
  a.prepare_payload();
  auto& stream = session.stream;
  stream.expires_after(kWriteTimeout);
  auto [ec, n] = co_await bhttp::async_write(stream, a, kTuple);
  if (ec) co_return;
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  stream.expires_after(kLingerTime);
  std::vector<char> sink(kReadChunk);
  for (std::size_t drained = 0; drained < kLingerBytes;) {
    auto [rec, got] = co_await stream.async_read_some(asio::buffer(sink), kTuple);
    if (rec) break;
    drained += got;
  }
}

asio::awaitable<Answer> InferenceServer::Net::answer(Request& request) {
  const std::string target(request.target());
  std::string path = target.substr(0, target.find('?'));
  if (path.size() > 1 && path.back() == '/') path.pop_back();  // /v2/ is /v2
  const bool get = request.method() == bhttp::verb::get;
  const bool post = request.method() == bhttp::verb::post;
  const ModelIo& io = server.engine_.io();
  if (path == "/v2/health/live" && get) co_return json_answer(200, {{"live", true}});
  if (path == "/v2/health/ready" && get) co_return json_answer(200, {{"ready", !server.stopping_}});
  if (path == "/v2" && get)
    co_return json_answer(200, {{"name", "tsum-train"}, {"version", "1"}, {"extensions", {"binary_tensor_data"}}});
  if (path == "/v2/tsum/host" && get) co_return make_answer(200, "application/json", server.host_stats());
  if (path == "/v2/tsum/stop" && post) {
    const std::string token(request["x-tsum-stop-token"]);
    if (server.config_.stop_token.empty()) co_return reject(404, "this server has no stop token: stop it with SIGTERM");
    if (token != server.config_.stop_token) co_return reject(403, "wrong or missing X-Tsum-Stop-Token");
    server.stop_requested_ = true;
    co_return json_answer(200, {{"stopping", true}});
  }
  const auto model = model_path(path);
  if (!model) co_return reject(404, "no such route: " + path);
  if (model->first != io.name)
    co_return reject(404, "no model '" + model->first + "' here (this server has '" + io.name + "')");
  if (model->second.empty() && get) co_return json_answer(200, model_metadata(io, server.config_.batching));
  if (model->second == "/ready" && get) co_return json_answer(200, {{"name", io.name}, {"ready", true}});
  if (model->second == "/infer") {
    if (!post) co_return reject(405, "infer takes POST");
    Answer a = co_await infer(request, model->first);
    co_return a;
  }
  co_return reject(404, "no such route: " + path);
}

asio::awaitable<Answer> InferenceServer::Net::infer(Request& request, const std::string& model) {
  const auto received = Clock::now();
  const ModelIo& io = server.engine_.io();
  const std::int64_t max_batch = server.config_.batching.max_batch;
  std::optional<std::size_t> json_length;
  if (const auto it = request.find("inference-header-content-length"); it != request.end()) {
    const beast::string_view h = it->value();
    std::size_t n = 0;
    const auto [ptr, ec] = std::from_chars(h.data(), h.data() + h.size(), n);
    if (h.empty() || ec != std::errc() || ptr != h.data() + h.size())
      co_return reject(400, "malformed Inference-Header-Content-Length");
    json_length = n;
  }
  auto parsed = v2::parse_infer_request(request.body(), json_length, kMaxElements);
  { const auto gone = std::move(request.body()); }  // read into tensors: the body's bytes go now
  if (!parsed.ok()) co_return reject(400, parsed.error().detail);
  if (parsed->inputs.size() != 1) co_return reject(400, "give one input: 'input' (FP32) or 'image' (BYTES)");
  std::vector<v2::OutputRequest> outputs = parsed->outputs;
  if (outputs.empty()) outputs = {{"logits", parsed->binary_data_output}, {"class", parsed->binary_data_output}};
  for (const auto& o : outputs)
    if (o.name != "logits" && o.name != "class")
      co_return reject(400, "unknown output '" + o.name + "' (logits, class)");
  // The batch size before any decoding, so an oversize request costs nothing.
  const auto& shape = parsed->inputs.front().shape;
  if (const std::int64_t n = shape.empty() ? 0 : shape.front(); n < 1 || n > max_batch)
    co_return reject(400, "a request holds 1.." + std::to_string(max_batch) + " images, this one " +
                              std::to_string(n));
  auto images = read_images(parsed->inputs.front(), io);
  parsed->inputs.clear();
  if (!images.error.empty()) co_return reject(400, images.error);
  const std::int64_t n = images.n;
  JobResult result = co_await async_run_batch(server.batcher_, std::move(images.data), n, asio::use_awaitable);
  if (!result.status.ok())
    co_return reject(result.status.code() == Code::unavailable ? 503 : 500, result.status.error().detail);
  v2::InferAnswer answer{model, parsed->id, {}};
  for (const auto& o : outputs) {
    v2::OutputTensor t;
    t.name = o.name;
    t.binary = o.binary;
    if (o.name == "logits") {
      t.shape = {n, io.classes};
      t.fp32 = result.logits;
    } else {
      t.shape = {n};
      for (std::int64_t i = 0; i < n; ++i) {
        const auto* row = result.logits.data() + i * io.classes;
        t.i64.push_back(std::max_element(row, row + io.classes) - row);
      }
    }
    answer.outputs.push_back(std::move(t));
  }
  auto body = v2::format_infer_answer(answer);
  Answer a = make_answer(200, body.json_length ? "application/octet-stream" : "application/json",
                         std::move(body.body));
  auto us = [](double s) { return std::to_string(static_cast<std::int64_t>(s * 1e6)); };
  a.set("X-Tsum-Queue-Us", us(result.queue_s));
  a.set("X-Tsum-Compute-Us", us(result.compute_s));
  a.set("X-Tsum-Batch", std::to_string(result.batch));
  a.set("X-Tsum-Server-Us", us(std::chrono::duration<double>(Clock::now() - received).count()));
  if (body.json_length) a.set("Inference-Header-Content-Length", std::to_string(*body.json_length));
  ++server.requests_;
  co_return a;
}

std::string InferenceServer::host_stats() {
  const auto cpu = cpu_jiffies();
  const auto s = stats();
  json j = {{"cpu_busy_jiffies", cpu.busy},
            {"cpu_total_jiffies", cpu.total},
            {"cpus", static_cast<std::int64_t>(std::thread::hardware_concurrency())},
            {"rss_bytes", proc_kib_bytes("/proc/self/status", "VmRSS:")},
            {"mem_used_bytes",
             proc_kib_bytes("/proc/meminfo", "MemTotal:") - proc_kib_bytes("/proc/meminfo", "MemAvailable:")},
            {"requests", s.requests},
            {"rejected", s.rejected},
            {"batches", s.batches},
            {"images", s.images}};
  if (gpu_->nvml) {
    if (auto samples = gpu_->nvml->sample(); samples.ok() && !samples->empty()) {
      j["gpu_util_pct"] = samples->front().util_pct;
      j["gpu_mem_used_bytes"] = samples->front().mem_used_bytes;
    }
  }
  return j.dump();
}

}  // namespace tsum::workload
