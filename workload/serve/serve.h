// The room workload/serve/ owns `tsum-train serve`: the Open Inference Protocol server, its dynamic batcher, the
// engines it serves and their limits. It calls models/, train/ (the device), machine/ and infer/'s HTTP client.
//
// `tsum-train serve`: a model answering inference requests over HTTP in the Open Inference Protocol (KServe v2,
// infer_protocol.h), so that Triton's and KServe's clients work against it, with server-side dynamic batching
// (batcher.h). No libtorch here: the model is an Engine; serve_engines.cpp makes the libtorch ones and runs the
// command.
//
// Routes (every answer JSON unless an output is binary):
//   GET  /v2/health/live, /v2/health/ready            200 {"live": true} / {"ready": true}
//   GET  /v2                                          server metadata (name, version, extensions)
//   GET  /v2/models/{m}[/versions/1]                  model metadata: inputs, outputs, max_batch
//   GET  /v2/models/{m}[/versions/1]/ready            200 {"name": m, "ready": true}
//   POST /v2/models/{m}[/versions/1]/infer            inference, one request of 1..max_batch images:
//        input "input": FP32 [n, channels, height, width] (NCHW, normalized), or
//        input "image": BYTES [n], a JPEG per element of the model's height x width (normalized here with the
//                       ImageNet mean and deviation, as `tsum-train infer` does);
//        outputs "logits" FP32 [n, classes] and "class" INT64 [n] (default both).
//        The answer's headers say where its time went: X-Tsum-Queue-Us (waiting for its batch), X-Tsum-Compute-Us
//        (its batch's run), X-Tsum-Server-Us (request read to answer written, decoding included), X-Tsum-Batch
//        (images in its batch).
//   GET  /v2/tsum/host                                this host now: CPU jiffies (busy, total), this process's
//                                                     RSS, memory used, GPU use where NVML answers; counters
//   POST /v2/tsum/stop                                with X-Tsum-Stop-Token (the config's stop_token, when set):
//                                                     stop_requested() turns true (the load client ends a run)
// Bad requests get a 4xx with {"error": "..."} and the connection stays open (a malformed head closes it);
// a full queue is 503; nothing one client sends reaches another's answer.
//
// HTTP is Boost.Beast's on Asio, as tsumd's: keep-alive, pipelined requests, bodies by Content-Length or chunked,
// "Expect: 100-continue" answered once the head is in. Limits, each answered before the connection closes: a head
// over HttpLimits::max_head (431), a body over max_body (413, before it is read), a head that does not end within
// head_timeout (408), a version other than 1.0 and 1.1 (505); a connection silent for idle_timeout is closed.
// Memory: a request holds its body and its tensors (a JSON body is read into floats as it parses, never into a
// document: infer_protocol.h), and its large buffers are mapped for themselves (large_alloc.h), so what a large
// request took goes back to the system once it is answered.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "common/result.h"
#include "workload/serve/batcher.h"

namespace tsum::workload {

struct HttpLimits {
  std::size_t max_head = 16 * 1024;
  std::size_t max_body = 64u << 20;
};

// The parser the server reads each request with, under `limits`: shared with the fuzz target
// (tests/fuzz/fuzz_infer_request.cpp), which feeds it what a client could send.
using RequestBody = boost::beast::http::basic_string_body<char, std::char_traits<char>, LargeAllocator<char>>;
using RequestParser = boost::beast::http::request_parser<RequestBody>;
void apply_limits(RequestParser& parser, const HttpLimits& limits);
// The status a request the parser refused is answered with: 431 (head too large), 413 (body too large), 505 (a
// version other than HTTP/1.0 and 1.1, told from a malformed request line by `head`, the bytes it began with),
// else 400.
int refusal_status(const boost::system::error_code& ec, std::string_view head = {});

struct ServerConfig {
  std::string host = "0.0.0.0";  // the address to listen on
  int port = 8000;               // 0: any free port (port() says which)
  Batcher::Config batching;
  HttpLimits limits;
  int io_threads = 0;  // threads reading, decoding and answering requests; 0: the CPUs (at least 2)
  int max_connections = 1024;                  // beyond: 503 and close
  std::chrono::seconds idle_timeout{120};      // a keep-alive connection silent this long is closed
  std::chrono::seconds head_timeout{10};       // a request head begun and not ended this long: 408 and close
  std::string stop_token;                      // non-empty: POST /v2/tsum/stop with it asks the server to stop
};

class InferenceServer {
 public:
  // One model instance per engine (Batcher): each runs on a thread of its own, taking batches from one queue.
  InferenceServer(std::vector<Engine*> engines, ServerConfig config);
  InferenceServer(Engine& engine, ServerConfig config)
      : InferenceServer(std::vector<Engine*>{&engine}, std::move(config)) {}
  ~InferenceServer();  // stop()
  InferenceServer(const InferenceServer&) = delete;
  InferenceServer& operator=(const InferenceServer&) = delete;

  // Binds and listens, then serves on threads of its own. unavailable naming the address when it cannot bind.
  Status start();
  int port() const { return port_; }
  // Runs `task` with each instance's engine on its thread (Batcher::run_on_model_threads): the warm-up goes there.
  void on_model_threads(const std::function<void(Engine&)>& task) { batcher_.run_on_model_threads(task); }
  // A client with the stop token asked the server to stop (the caller stops it).
  bool stop_requested() const { return stop_requested_.load(); }

  // Stops accepting, closes idle connections, lets each other finish the request it is in, stops the batcher.
  // Idempotent.
  void stop();

  struct Stats {
    std::int64_t requests = 0;  // infer requests answered 200
    std::int64_t rejected = 0;  // answered 4xx or 5xx
    std::int64_t batches = 0;
    std::int64_t images = 0;
  };
  Stats stats() const;

 private:
  // The Asio side (serve.cpp): the io_context and its threads, the acceptor, the connections alive, the routes.
  struct Net;
  std::string host_stats();

  Engine& engine_;
  ServerConfig config_;
  Batcher batcher_;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> stop_requested_{false};
  std::atomic<std::int64_t> requests_{0};
  std::atomic<std::int64_t> rejected_{0};
  std::unique_ptr<Net> net_;
  struct Gpu;
  std::unique_ptr<Gpu> gpu_;
};

}  // namespace tsum::workload
