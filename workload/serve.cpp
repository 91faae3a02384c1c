#include "workload/serve.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <charconv>
#include <optional>

#include <nlohmann/json.hpp>

#include "workload/host_stats.h"
#include "workload/infer_protocol.h"
#include "workload/jpeg.h"
#include "workload/nvml.h"

namespace tsum::workload {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr std::int64_t kMaxElements = std::int64_t{1} << 28;
constexpr int kPollMs = 200;

std::string json_answer(int status, const json& body, bool keep_alive = true) {
  return http1::format_response(status, "application/json", body.dump(), {}, keep_alive);
}

std::string error_answer(int status, std::string_view message, bool keep_alive = true) {
  return http1::format_response(status, "application/json", v2::error_body(message), {}, keep_alive);
}

bool send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<std::size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, 30'000) <= 0) return false;
    } else {
      return false;
    }
  }
  return true;
}

// After an answer that ends a connection early (a 413 before the body is read): closing a socket with unread bytes
// makes the kernel reset the connection, and the client may lose the answer with it. So stop sending, read what
// the client still sends for a while (at most 2 s and 256 MiB), then close, as web servers' lingering close does.
void linger_close(int fd) {
  ::shutdown(fd, SHUT_WR);
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  char sink[64 * 1024];
  for (std::size_t drained = 0; drained < (std::size_t{256} << 20) && Clock::now() < deadline;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::recv(fd, sink, sizeof sink, 0);
    if (n <= 0) return;
    drained += static_cast<std::size_t>(n);
  }
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
  std::vector<float> data;
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

}  // namespace

struct InferenceServer::Gpu {
  std::unique_ptr<Nvml> nvml;
};

InferenceServer::InferenceServer(Engine& engine, ServerConfig config)
    : engine_(engine), config_(std::move(config)), batcher_(engine, config_.batching), gpu_(std::make_unique<Gpu>()) {
  if (auto nvml = Nvml::open(); nvml.ok()) gpu_->nvml = std::move(*nvml);
}

InferenceServer::~InferenceServer() { stop(); }

Status InferenceServer::start() {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST;
  addrinfo* found = nullptr;
  const std::string where = config_.host + ":" + std::to_string(config_.port);
  if (const int rc = ::getaddrinfo(config_.host.c_str(), std::to_string(config_.port).c_str(), &hints, &found);
      rc != 0)
    return make_error(Code::invalid_argument, "cannot listen on " + where + ": " + gai_strerror(rc));
  const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  if (fd >= 0) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const bool ok = fd >= 0 && ::bind(fd, found->ai_addr, found->ai_addrlen) == 0 && ::listen(fd, 512) == 0;
  const std::string why = std::strerror(errno);
  ::freeaddrinfo(found);
  if (!ok) {
    if (fd >= 0) ::close(fd);
    return make_error(Code::unavailable, "cannot listen on " + where + ": " + why);
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  listen_fd_ = fd;
  acceptor_ = std::thread([this] { accept_loop(); });
  return {};
}

void InferenceServer::stop() {
  if (stopping_.exchange(true)) return;
  if (acceptor_.joinable()) acceptor_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
  {
    // Each connection notices within kPollMs, or after the request it is in; a batch in progress finishes first.
    std::unique_lock lock(conns_mu_);
    conns_cv_.wait(lock, [this] { return connections_ == 0; });
  }
  batcher_.stop();
}

InferenceServer::Stats InferenceServer::stats() const {
  const auto b = batcher_.stats();
  return {requests_.load(), rejected_.load(), b.batches, b.images};
}

void InferenceServer::accept_loop() {
  while (!stopping_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, kPollMs) <= 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::unique_lock lock(conns_mu_);
    if (connections_ >= config_.max_connections) {
      lock.unlock();
      send_all(fd, error_answer(503, "too many connections", false));
      ::close(fd);
      continue;
    }
    ++connections_;
    lock.unlock();
    std::thread([this, fd] {
      serve_connection(fd);
      ::close(fd);
      std::lock_guard done(conns_mu_);
      if (--connections_ == 0) conns_cv_.notify_all();
    }).detach();
  }
}

namespace {
// True when `in` starts with a whole request head that asks "Expect: 100-continue" (any case).
bool expects_continue(const std::string& in) {
  const std::size_t end = in.find("\r\n\r\n");
  if (end == std::string::npos) return false;
  std::string head = in.substr(0, end);
  for (auto& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return head.find("\r\nexpect:") != std::string::npos && head.find("100-continue") != std::string::npos;
}
}  // namespace

void InferenceServer::serve_connection(int fd) {
  std::string in;
  char chunk[64 * 1024];
  auto last = Clock::now();
  std::optional<Clock::time_point> head_began;  // the request now arriving: its first byte
  bool continued = false;                       // its "100 Continue" has been sent
  while (!stopping_) {
    auto taken = http1::take_message(in, http1::Kind::request, config_.limits);
    if (taken.what == http1::Taken::What::error) {
      ++rejected_;
      send_all(fd, error_answer(taken.status, taken.error, false));
      linger_close(fd);
      return;
    }
    if (taken.what == http1::Taken::What::message) {
      bool keep_alive = taken.message.keep_alive;
      if (!send_all(fd, answer(taken.message, keep_alive)) || !keep_alive) return;
      last = Clock::now();
      head_began.reset();
      continued = false;
      continue;
    }
    // A client that waits for leave to send its body (curl over 1 MiB) gets it as soon as its head is in.
    if (!continued && expects_continue(in)) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      if (!send_all(fd, std::string(kContinue))) return;
      continued = true;
    }
    if (!in.empty() && !head_began) head_began = Clock::now();
    if (head_began && in.find("\r\n\r\n") == std::string::npos && Clock::now() - *head_began > config_.head_timeout) {
      ++rejected_;
      send_all(fd, error_answer(408, "the request head did not end in time", false));
      return;
    }
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, kPollMs);
    if (r == 0) {
      if (Clock::now() - last > config_.idle_timeout) return;
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    const ssize_t n = r > 0 ? ::recv(fd, chunk, sizeof chunk, 0) : -1;
    if (n <= 0) return;
    in.append(chunk, static_cast<std::size_t>(n));
  }
}

std::string InferenceServer::answer(const http1::Message& request, bool& keep_alive) {
  std::string path = request.target.substr(0, request.target.find('?'));
  if (path.size() > 1 && path.back() == '/') path.pop_back();  // /v2/ is /v2
  const bool get = request.method == "GET";
  const ModelIo& io = engine_.io();
  auto reject = [&](int status, std::string_view why) {
    ++rejected_;
    return error_answer(status, why, keep_alive);
  };
  if (path == "/v2/health/live" && get) return json_answer(200, {{"live", true}}, keep_alive);
  if (path == "/v2/health/ready" && get) return json_answer(200, {{"ready", !stopping_}}, keep_alive);
  if (path == "/v2" && get)
    return json_answer(200, {{"name", "tsum-train"}, {"version", "1"}, {"extensions", {"binary_tensor_data"}}},
                       keep_alive);
  if (path == "/v2/tsum/host" && get) {
    return http1::format_response(200, "application/json", host_stats(), {}, keep_alive);
  }
  if (path == "/v2/tsum/stop" && request.method == "POST") {
    const auto* token = request.header("x-tsum-stop-token");
    if (config_.stop_token.empty()) return reject(404, "this server has no stop token: stop it with SIGTERM");
    if (!token || *token != config_.stop_token) return reject(403, "wrong or missing X-Tsum-Stop-Token");
    stop_requested_ = true;
    return json_answer(200, {{"stopping", true}}, keep_alive);
  }
  const auto model = model_path(path);
  if (!model) return reject(404, "no such route: " + path);
  if (model->first != io.name) return reject(404, "no model '" + model->first + "' here (this server has '" + io.name + "')");
  if (model->second.empty() && get) return json_answer(200, model_metadata(io, config_.batching), keep_alive);
  if (model->second == "/ready" && get) return json_answer(200, {{"name", io.name}, {"ready", true}}, keep_alive);
  if (model->second == "/infer") {
    if (request.method != "POST") return reject(405, "infer takes POST");
    return infer(request, model->first);
  }
  return reject(404, "no such route: " + path);
}

std::string InferenceServer::infer(const http1::Message& request, const std::string& model) {
  const auto received = Clock::now();
  const ModelIo& io = engine_.io();
  auto reject = [&](int status, std::string_view why) {
    ++rejected_;
    return error_answer(status, why, request.keep_alive);
  };
  std::optional<std::size_t> json_length;
  if (const auto* h = request.header("inference-header-content-length")) {
    std::size_t n = 0;
    const auto [ptr, ec] = std::from_chars(h->data(), h->data() + h->size(), n);
    if (h->empty() || ec != std::errc() || ptr != h->data() + h->size())
      return reject(400, "malformed Inference-Header-Content-Length");
    json_length = n;
  }
  auto parsed = v2::parse_infer_request(request.body, json_length, kMaxElements);
  if (!parsed.ok()) return reject(400, parsed.error().detail);
  if (parsed->inputs.size() != 1) return reject(400, "give one input: 'input' (FP32) or 'image' (BYTES)");
  std::vector<v2::OutputRequest> outputs = parsed->outputs;
  if (outputs.empty()) outputs = {{"logits", parsed->binary_data_output}, {"class", parsed->binary_data_output}};
  for (const auto& o : outputs)
    if (o.name != "logits" && o.name != "class") return reject(400, "unknown output '" + o.name + "' (logits, class)");
  // The batch size before any decoding, so an oversize request costs nothing.
  const auto& shape = parsed->inputs.front().shape;
  if (const std::int64_t n = shape.empty() ? 0 : shape.front(); n < 1 || n > config_.batching.max_batch)
    return reject(400, "a request holds 1.." + std::to_string(config_.batching.max_batch) + " images, this one " +
                           std::to_string(n));
  auto images = read_images(parsed->inputs.front(), io);
  if (!images.error.empty()) return reject(400, images.error);
  auto future = batcher_.submit(std::move(images.data), images.n);
  if (!future) return reject(503, "the queue is full");
  JobResult result = future->get();
  if (!result.status.ok()) return reject(result.status.code() == Code::unavailable ? 503 : 500,
                                         result.status.error().detail);
  v2::InferAnswer a{model, parsed->id, {}};
  for (const auto& o : outputs) {
    v2::OutputTensor t;
    t.name = o.name;
    t.binary = o.binary;
    if (o.name == "logits") {
      t.shape = {images.n, io.classes};
      t.fp32 = result.logits;
    } else {
      t.shape = {images.n};
      for (std::int64_t i = 0; i < images.n; ++i) {
        const auto* row = result.logits.data() + i * io.classes;
        t.i64.push_back(std::max_element(row, row + io.classes) - row);
      }
    }
    a.outputs.push_back(std::move(t));
  }
  auto body = v2::format_infer_answer(a);
  auto us = [](double s) { return std::to_string(static_cast<std::int64_t>(s * 1e6)); };
  std::vector<http1::Header> headers = {
      {"X-Tsum-Queue-Us", us(result.queue_s)},
      {"X-Tsum-Compute-Us", us(result.compute_s)},
      {"X-Tsum-Batch", std::to_string(result.batch)},
      {"X-Tsum-Server-Us", us(std::chrono::duration<double>(Clock::now() - received).count())}};
  if (body.json_length) headers.push_back({"Inference-Header-Content-Length", std::to_string(*body.json_length)});
  ++requests_;
  return http1::format_response(200, body.json_length ? "application/octet-stream" : "application/json", body.body,
                                headers, request.keep_alive);
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
