#include "workload/train/options.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string_view>

#include "workload/data/dataset.h"
#include "workload/models/model_registry.h"
#include "workload/optim/optimizer_registry.h"
#include "workload/models/resnet50.h"

namespace tsum::workload {
namespace {

constexpr std::int64_t kBig = std::numeric_limits<std::int32_t>::max();

Result<std::int64_t> parse_int(std::string_view flag, const std::string& text, std::int64_t min,
                               std::int64_t max) {
  std::int64_t v = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || v < min || v > max) {
    return make_error(Code::invalid_argument,
                      std::string(flag) + ": expected an integer in [" + std::to_string(min) +
                          ", " + std::to_string(max) + "], got '" + text + "'");
  }
  return v;
}

// A finite number > 0, or >= 0 when `zero_ok`.
Result<double> parse_double(std::string_view flag, const std::string& text, bool zero_ok) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  const bool in_range = zero_ok ? v >= 0.0 : v > 0.0;
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || !in_range) {
    return make_error(Code::invalid_argument,
                      std::string(flag) + ": expected a " +
                          (zero_ok ? "non-negative" : "positive") + " number, got '" + text + "'");
  }
  return v;
}

Result<std::string> parse_nonempty(std::string_view flag, const std::string& text) {
  if (text.empty()) return make_error(Code::invalid_argument, std::string(flag) + ": empty value");
  return text;
}

Result<std::uint64_t> parse_seed(std::string_view flag, const std::string& text) {
  auto v = parse_int(flag, text, 0, std::numeric_limits<std::int64_t>::max());
  if (!v.ok()) return v.error();
  return static_cast<std::uint64_t>(*v);
}

// Sets `dst` from a parse result, or passes its error on.
template <class T, class U>
Status assign(T& dst, Result<U> parsed) {
  if (!parsed.ok()) return parsed.error();
  dst = *parsed;
  return {};
}

template <class E>
Result<E> parse_choice(std::string_view flag, const std::string& text, std::string_view a, E ea,
                       std::string_view b, E eb) {
  if (text == a) return ea;
  if (text == b) return eb;
  return make_error(Code::invalid_argument, std::string(flag) + ": expected " + std::string(a) +
                                                " or " + std::string(b) + ", got '" + text + "'");
}

// HOST:PORT (the port 1..65535; HOST a name or an IPv4 address).
Status parse_master(DistOptions& d, const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return make_error(Code::invalid_argument, "--master: expected HOST:PORT, got '" + text + "'");
  }
  auto port = parse_int("--master", text.substr(colon + 1), 1, 65535);
  if (!port.ok()) return port.error();
  d.master_host = text.substr(0, colon);
  d.master_port = static_cast<std::uint16_t>(*port);
  return {};
}

// Applies one flag's value to `o`.
Status apply(Options& o, std::string_view flag, const std::string& value) {
  if (flag == "--model") return assign(o.model, parse_nonempty(flag, value));
  if (flag == "--dataset") return assign(o.dataset, parse_nonempty(flag, value));
  if (flag == "--data") return assign(o.data_dir, parse_nonempty(flag, value));
  if (flag == "--optimizer") return assign(o.optimizer, parse_nonempty(flag, value));
  if (flag == "--checkpoint") return assign(o.checkpoint, parse_nonempty(flag, value));
  if (flag == "--state") return assign(o.state, parse_nonempty(flag, value));
  if (flag == "--resume") return assign(o.resume, parse_nonempty(flag, value));
  if (flag == "--checkpoint-every") return assign(o.checkpoint_every, parse_double(flag, value, true));
  if (flag == "--epochs") return assign(o.epochs, parse_int(flag, value, 1, kBig));
  if (flag == "--limit") return assign(o.limit, parse_int(flag, value, 1, kBig));
  if (flag == "--test-limit") return assign(o.test_limit, parse_int(flag, value, 1, kBig));
  if (flag == "--batch") return assign(o.batch, parse_int(flag, value, 1, kBig));
  if (flag == "--classes") return assign(o.classes, parse_int(flag, value, 1, kBig));
  if (flag == "--image-size") {
    return assign(o.image_size, parse_int(flag, value, ResNet50::kMinImageSize, kBig));
  }
  if (flag == "--threads") return assign(o.threads, parse_int(flag, value, 1, kBig));
  if (flag == "--seed") return assign(o.seed, parse_seed(flag, value));
  if (flag == "--device") return assign(o.placement.device, parse_device(value));
  if (flag == "--precision") return assign(o.placement.precision, parse_precision(value));
  if (flag == "--lr") return assign(o.lr, parse_double(flag, value, false));
  if (flag == "--decay") return assign(o.decay, parse_double(flag, value, true));
  if (flag == "--world-size") return assign(o.dist.world_size, parse_int(flag, value, 1, 4096));
  if (flag == "--rank") return assign(o.dist.rank, parse_int(flag, value, 0, 4095));
  if (flag == "--master") return parse_master(o.dist, value);
  if (flag == "--dist") {
    return assign(o.dist.mode, parse_choice(flag, value, "ring", DistMode::ring, "ps", DistMode::ps));
  }
  if (flag == "--dist-timeout") return assign(o.dist.timeout_s, parse_double(flag, value, false));
  return make_error(Code::invalid_argument, "unknown flag " + std::string(flag));
}

Status apply_gen(GenOptions& o, std::string_view flag, const std::string& value) {
  if (flag == "--n") return assign(o.n, parse_int(flag, value, 1, kBig));
  if (flag == "--size" && o.command == "gen-images") {
    return assign(o.size, parse_int(flag, value, 8, 4096));
  }
  if (flag == "--seed") return assign(o.seed, parse_seed(flag, value));
  return make_error(Code::invalid_argument, o.command + ": unknown flag " + std::string(flag));
}

Result<std::vector<std::int64_t>> parse_int_list(std::string_view flag, const std::string& text) {
  std::vector<std::int64_t> out;
  std::size_t begin = 0;
  for (;;) {
    const auto comma = text.find(',', begin);
    const std::string item = text.substr(begin, comma == std::string::npos ? comma : comma - begin);
    auto v = parse_int(flag, item, 1, 65536);
    if (!v.ok()) return v.error();
    out.push_back(*v);
    if (comma == std::string::npos) return out;
    begin = comma + 1;
  }
}

Status apply_infer(InferOptions& o, std::string_view flag, const std::string& value) {
  if (flag == "--model") return assign(o.model, parse_nonempty(flag, value));
  if (flag == "--batch") return assign(o.batches, parse_int_list(flag, value));
  if (flag == "--mode") {
    return assign(o.mode, parse_choice(flag, value, "sync", InferMode::sync, "async", InferMode::async));
  }
  if (flag == "--source") {
    return assign(o.source, parse_choice(flag, value, "files", InferSource::files, "memory",
                                         InferSource::memory));
  }
  if (flag == "--images") return assign(o.images_dir, parse_nonempty(flag, value));
  if (flag == "--iterations") return assign(o.iterations, parse_int(flag, value, 1, kBig));
  if (flag == "--warmup") return assign(o.warmup, parse_int(flag, value, 0, kBig));
  if (flag == "--loaders") return assign(o.loaders, parse_int(flag, value, 1, 256));
  if (flag == "--queue") return assign(o.queue, parse_int(flag, value, 1, 4096));
  if (flag == "--classes") return assign(o.classes, parse_int(flag, value, 1, kBig));
  if (flag == "--image-size") {
    return assign(o.image_size, parse_int(flag, value, ResNet50::kMinImageSize, kBig));
  }
  if (flag == "--threads") return assign(o.threads, parse_int(flag, value, 1, kBig));
  if (flag == "--device") return assign(o.placement.device, parse_device(value));
  if (flag == "--precision") return assign(o.placement.precision, parse_precision(value));
  if (flag == "--seed") return assign(o.seed, parse_seed(flag, value));
  if (flag == "--latency-file") return assign(o.latency_file, parse_nonempty(flag, value));
  return make_error(Code::invalid_argument, "infer: unknown flag " + std::string(flag));
}

Result<std::vector<double>> parse_double_list(std::string_view flag, const std::string& text) {
  std::vector<double> out;
  std::size_t begin = 0;
  for (;;) {
    const auto comma = text.find(',', begin);
    auto v = parse_double(flag, text.substr(begin, comma == std::string::npos ? comma : comma - begin), false);
    if (!v.ok()) return v.error();
    out.push_back(*v);
    if (comma == std::string::npos) return out;
    begin = comma + 1;
  }
}

Status apply_serve(ServeOptions& o, std::string_view flag, const std::string& value) {
  auto& b = o.server.batching;
  if (flag == "--model") return assign(o.model, parse_nonempty(flag, value));
  if (flag == "--torchscript") return assign(o.torchscript, parse_nonempty(flag, value));
  if (flag == "--checkpoint") return assign(o.checkpoint, parse_nonempty(flag, value));
  if (flag == "--name") return assign(o.name, parse_nonempty(flag, value));
  if (flag == "--input-shape") {
    if (auto st = assign(o.input_shape, parse_int_list(flag, value)); !st.ok()) return st;
    if (o.input_shape.size() != 3 || (o.input_shape[0] != 1 && o.input_shape[0] != 3))
      return make_error(Code::invalid_argument, "--input-shape: expected C,H,W with C 1 or 3, got '" + value + "'");
    return {};
  }
  if (flag == "--classes") return assign(o.classes, parse_int(flag, value, 1, kBig));
  if (flag == "--image-size") return assign(o.image_size, parse_int(flag, value, ResNet50::kMinImageSize, kBig));
  if (flag == "--service-ms") return assign(o.service_ms, parse_double(flag, value, true));
  if (flag == "--warmup") return assign(o.warmup, parse_int(flag, value, 0, 1000));
  if (flag == "--duration") return assign(o.duration_s, parse_double(flag, value, true));
  if (flag == "--host") return assign(o.server.host, parse_nonempty(flag, value));
  if (flag == "--port") return assign(o.server.port, parse_int(flag, value, 0, 65535));
  if (flag == "--max-batch") return assign(b.max_batch, parse_int(flag, value, 1, 4096));
  if (flag == "--max-delay-ms") {
    auto ms = parse_double(flag, value, true);
    if (!ms.ok()) return ms.error();
    b.max_delay = std::chrono::microseconds(static_cast<std::int64_t>(*ms * 1000));
    return {};
  }
  if (flag == "--max-queue") return assign(b.max_queue, parse_int(flag, value, 1, kBig));
  if (flag == "--max-body-mb") {
    auto mb = parse_int(flag, value, 1, 4096);
    if (!mb.ok()) return mb.error();
    o.server.limits.max_body = static_cast<std::size_t>(*mb) << 20;
    return {};
  }
  if (flag == "--max-connections") return assign(o.server.max_connections, parse_int(flag, value, 1, 65536));
  if (flag == "--io-threads") return assign(o.server.io_threads, parse_int(flag, value, 1, 256));
  if (flag == "--instances") return assign(o.instances, parse_int(flag, value, 1, 64));
  if (flag == "--stop-token") return assign(o.server.stop_token, parse_nonempty(flag, value));
  if (flag == "--threads") return assign(o.threads, parse_int(flag, value, 1, kBig));
  if (flag == "--device") return assign(o.placement.device, parse_device(value));
  if (flag == "--precision") return assign(o.placement.precision, parse_precision(value));
  if (flag == "--seed") return assign(o.seed, parse_seed(flag, value));
  return make_error(Code::invalid_argument, "serve: unknown flag " + std::string(flag));
}

Status apply_load(LoadOptions& o, std::string_view flag, const std::string& value) {
  if (flag == "--url") return assign(o.url, parse_nonempty(flag, value));
  if (flag == "--model") return assign(o.model, parse_nonempty(flag, value));
  if (flag == "--concurrency") return assign(o.concurrency, parse_int_list(flag, value));
  if (flag == "--rate") return assign(o.rates, parse_double_list(flag, value));
  if (flag == "--arrivals") {
    return assign(o.arrivals,
                  parse_choice(flag, value, "poisson", Arrivals::poisson, "constant", Arrivals::constant));
  }
  if (flag == "--batch") return assign(o.batch, parse_int(flag, value, 1, 4096));
  if (flag == "--images") return assign(o.images_dir, parse_nonempty(flag, value));
  if (flag == "--window-s") return assign(o.window_s, parse_double(flag, value, false));
  if (flag == "--window-requests") return assign(o.window_requests, parse_int(flag, value, 1, kBig));
  if (flag == "--stability") {
    auto pct = parse_double(flag, value, false);
    if (!pct.ok()) return pct.error();
    o.stability = *pct / 100.0;
    return {};
  }
  if (flag == "--max-trials") return assign(o.max_trials, parse_int(flag, value, 3, 1000));
  if (flag == "--warmup") return assign(o.warmup, parse_int(flag, value, 0, kBig));
  if (flag == "--bound-ms") return assign(o.bound_ms, parse_double(flag, value, true));
  if (flag == "--max-inflight") return assign(o.max_inflight, parse_int(flag, value, 1, 4096));
  if (flag == "--timeout-s") return assign(o.timeout_s, parse_double(flag, value, false));
  if (flag == "--sample-s") return assign(o.sample_s, parse_double(flag, value, false));
  if (flag == "--seed") return assign(o.seed, parse_seed(flag, value));
  if (flag == "--stop-token") return assign(o.stop_token, parse_nonempty(flag, value));
  if (flag == "--latency-file") return assign(o.latency_file, parse_nonempty(flag, value));
  return make_error(Code::invalid_argument, "load: unknown flag " + std::string(flag));
}

// Walks `args` from `first`: boolean flags go to `on_switch` (false: not a switch), the others with
// their value to `on_value`; a non-flag argument is an error.
template <class OnSwitch, class OnValue>
Status walk_flags(const std::vector<std::string>& args, std::size_t first, OnSwitch on_switch,
                  OnValue on_value) {
  for (std::size_t i = first; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (on_switch(arg)) continue;
    if (arg.rfind("--", 0) != 0) {
      return make_error(Code::invalid_argument, "unexpected argument '" + arg + "'");
    }
    std::string flag = arg;
    std::string value;
    if (const auto eq = arg.find('='); eq != std::string::npos) {
      flag = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    } else {
      if (i + 1 >= args.size()) return make_error(Code::invalid_argument, flag + ": missing value");
      value = args[++i];
    }
    if (auto st = on_value(flag, value); !st.ok()) return st;
  }
  return {};
}

}  // namespace

Result<Options> parse_options(const std::vector<std::string>& args) {
  Options o;
  auto on_switch = [&](const std::string& arg) {
    if (arg == "--help" || arg == "-h") return o.help = true;
    if (arg == "--augment") return o.augment = true;
    if (arg == "--ps-async") return o.dist.ps_async = true;
    return false;
  };
  auto on_value = [&](const std::string& flag, const std::string& value) {
    return apply(o, flag, value);
  };
  if (auto st = walk_flags(args, 0, on_switch, on_value); !st.ok()) return st.error();
  return o;
}

Status check_dist_options(const Options& options, std::int64_t batch) {
  const DistOptions& d = options.dist;
  auto bad = [](const std::string& detail) { return make_error(Code::invalid_argument, detail); };
  if (d.rank >= d.world_size) {
    return bad("--rank " + std::to_string(d.rank) + " is outside the world of --world-size " +
               std::to_string(d.world_size) + " (ranks 0.." + std::to_string(d.world_size - 1) + ")");
  }
  if (d.ps_async && d.mode != DistMode::ps) return bad("--ps-async needs --dist ps");
  if (d.world_size == 1) {
    if (d.ps_async) return bad("--ps-async needs --world-size 2 or more");
    return {};
  }
  if (d.master_host.empty()) {
    return bad("--world-size " + std::to_string(d.world_size) +
               " needs --master HOST:PORT (rank 0 listens there, the others connect)");
  }
  const bool split_batch = !(d.mode == DistMode::ps && d.ps_async);
  if (split_batch && batch % d.world_size != 0) {
    return bad("--batch " + std::to_string(batch) + " is not divisible by --world-size " +
               std::to_string(d.world_size) + " (each rank computes batch/world-size examples)");
  }
  if (!options.placement.device.is_cpu()) {
    return bad("--world-size > 1 trains on the CPU only (c10d Gloo over TCP); drop --device");
  }
  if (options.placement.precision == Precision::fp16) {
    return bad("--precision fp16 (loss scaling) is not supported with --world-size > 1");
  }
  return {};
}

bool is_gen_command(const std::vector<std::string>& args) {
  return !args.empty() &&
         (args[0] == "gen-cifar" || args[0] == "gen-tokens" || args[0] == "gen-images");
}

bool is_infer_command(const std::vector<std::string>& args) {
  return !args.empty() && args[0] == "infer";
}

Result<InferOptions> parse_infer_options(const std::vector<std::string>& args) {
  InferOptions o;
  auto on_switch = [](const std::string&) { return false; };
  auto on_value = [&](const std::string& flag, const std::string& value) {
    return apply_infer(o, flag, value);
  };
  if (auto st = walk_flags(args, 1, on_switch, on_value); !st.ok()) return st.error();
  return o;
}

bool is_serve_command(const std::vector<std::string>& args) { return !args.empty() && args[0] == "serve"; }

Result<ServeOptions> parse_serve_options(const std::vector<std::string>& args) {
  ServeOptions o;
  auto on_switch = [](const std::string&) { return false; };
  auto on_value = [&](const std::string& flag, const std::string& value) { return apply_serve(o, flag, value); };
  if (auto st = walk_flags(args, 1, on_switch, on_value); !st.ok()) return st.error();
  return o;
}

bool is_load_command(const std::vector<std::string>& args) { return !args.empty() && args[0] == "load"; }

Result<LoadOptions> parse_load_options(const std::vector<std::string>& args) {
  LoadOptions o;
  auto on_switch = [](const std::string&) { return false; };
  auto on_value = [&](const std::string& flag, const std::string& value) { return apply_load(o, flag, value); };
  if (auto st = walk_flags(args, 1, on_switch, on_value); !st.ok()) return st.error();
  return o;
}

Result<GenOptions> parse_gen_options(const std::vector<std::string>& args) {
  GenOptions o;
  if (!is_gen_command(args)) {
    return make_error(Code::invalid_argument, "expected gen-cifar, gen-tokens or gen-images");
  }
  o.command = args[0];
  if (args.size() < 2 || args[1].rfind("--", 0) == 0) {
    return make_error(Code::invalid_argument, o.command + ": missing DIR");
  }
  o.dir = args[1];
  auto on_switch = [](const std::string&) { return false; };
  auto on_value = [&](const std::string& flag, const std::string& value) {
    return apply_gen(o, flag, value);
  };
  if (auto st = walk_flags(args, 2, on_switch, on_value); !st.ok()) return st.error();
  return o;
}

// The serve and load commands' flags, part of usage().
std::string serving_usage() {
  return "serve flags: answer inference requests over HTTP (KServe v2 / Open Inference Protocol):\n"
         "  --model NAME        image model, or delay (a fixed service time) (default resnet50)\n"
         "  --checkpoint PATH   the model's trained weights (training's --checkpoint; default: seeded\n"
         "                      random ones, which compute as fast)\n"
         "  --torchscript FILE  a TorchScript model instead (with --input-shape C,H,W)\n"
         "  --name NAME         the name it is served under (default the model's)\n"
         "  --input-shape C,H,W  images the TorchScript or delay model reads (delay: 3,8,8)\n"
         "  --service-ms MS     delay: the time each batch takes (default 10)\n"
         "  --host ADDR --port N  where to listen (default 0.0.0.0:8000; port 0: any free one)\n"
         "  --max-batch N       images per model run, merged from concurrent requests (default 8)\n"
         "  --max-delay-ms MS   the longest a request waits for others to join its batch (default 0)\n"
         "  --max-queue N       images waiting before requests get 503 (default 1024)\n"
         "  --max-body-mb N     largest request body (default 64); --max-connections N (1024)\n"
         "  --io-threads N      threads reading and decoding requests (default the CPUs, at least 2)\n"
         "  --instances N       copies of the model, each on a thread of its own with --threads / N of the\n"
         "                      threads, taking batches from one queue (default 1)\n"
         "  --warmup N          unmeasured runs of batch 1 and max-batch before ready (default 3)\n"
         "  --duration S        stop after S seconds (default 0: at SIGTERM or SIGINT)\n"
         "  --stop-token T      also stop at POST /v2/tsum/stop with X-Tsum-Stop-Token: T\n"
         "  --classes, --image-size, --threads, --device, --precision, --seed as for training\n"
         "load flags: perf_analyzer-style load on such a server, one load_level event per level:\n"
         "  --url URL           the server (default http://127.0.0.1:8000)\n"
         "  --model NAME        the model to ask (default resnet50)\n"
         "  --concurrency LIST  requests kept in flight, a level each (default 1,2,4,8)\n"
         "  --rate LIST         requests/s instead, a level each; --arrivals poisson|constant\n"
         "  --batch N           images per request (default 1)\n"
         "  --images DIR        send these JPEGs (BYTES); default seeded random FP32 tensors\n"
         "  --window-s S --window-requests N  a measurement window: at least S seconds and N\n"
         "                      answers (default 2, 50)\n"
         "  --stability PCT     three windows in a row within PCT of their mean (default 10),\n"
         "                      or --max-trials N windows (default 10)\n"
         "  --warmup N          answers per level before its first window, unmeasured (default 0)\n"
         "  --bound-ms MS       p99 bound: the sweep stops at the first level over it\n"
         "  --max-inflight N    rate mode: connections (default 256); --timeout-s S (60)\n"
         "  --stop-token T      when done (or failed), stop the server (its --stop-token)\n"
         "  --latency-file F    also write every measured latency to F (CSV: level,latency_ms)\n"
         "  --sample-s S        how often both hosts' CPU and memory are sampled (default 1)\n";
}

std::string usage() {
  return "usage: tsum-train [flags]\n"
         "       tsum-train gen-cifar DIR [--n N] [--seed S]\n"
         "       tsum-train gen-tokens DIR [--n N] [--seed S]\n"
         "       tsum-train gen-images DIR [--n N] [--size PX] [--seed S]\n"
         "       tsum-train infer [infer flags]\n"
         "       tsum-train serve [serve flags]\n"
         "       tsum-train load [load flags]\n"
         "       tsum-train probe-gpu [--device cuda[:N]] [--budget-s S]\n"
         "training flags (defaults marked * depend on the model, see below):\n"
         "  --model NAME        model to train (" + model_names() + "; default mnist_cnn)\n"
         "  --dataset KIND      data set kind (" + data_kind_names() + "; default*)\n"
         "  --data DIR          data directory (default: idx /usr/share/datasets/fashion-mnist,\n"
         "                      cifar10 /usr/share/datasets/cifar-10-batches-bin,\n"
         "                      tokens /usr/share/datasets/tokens; unused by synthetic)\n"
         "  --epochs N          training epochs (default 1)\n"
         "  --limit N           use the first N training examples (default all; synthetic 256)\n"
         "  --test-limit N      evaluate on the first N test examples (default all; synthetic 64)\n"
         "  --batch N           batch size (default*)\n"
         "  --optimizer NAME    optimizer (" + optimizer_names() + "; default*)\n"
         "  --lr X              learning rate (default*: the model's with its own optimizer, else\n"
         "                      the optimizer's: sgd/momentum/nesterov/adagrad 0.01, rmsprop/adam\n"
         "                      0.001, adadelta 1.0, nadam 0.002)\n"
         "  --decay X           Keras-style decay, lr/(1 + X*step) (default*: 0)\n"
         "  --augment           random shifts (10%) and horizontal flips of training images\n"
         "  --classes N         output classes (resnet50 only; default 1000)\n"
         "  --image-size N      input side in pixels, >= 32 (resnet50 only; default 224)\n"
         "  --threads N         intra-op threads (default: CPUs in the affinity mask, capped by\n"
         "                      the cgroup CPU quota)\n"
         "  --device DEV        cpu, cuda or cuda:N (default cpu)\n"
         "  --precision P       fp32; bf16 (autocast, CPU or CUDA); fp16 (CUDA autocast with loss\n"
         "                      scaling) (default fp32)\n"
         "  --checkpoint PATH   where to save the trained model (default model.pt)\n"
         "  --state PATH        where checkpoints of the training state go (default state.pt):\n"
         "                      on SIGTERM (after the step in progress; then exit status 75)\n"
         "  --checkpoint-every S  and every S seconds of training (default 0: only on SIGTERM)\n"
         "  --resume PATH       go on from such a checkpoint: same model, optimizer and data\n"
         "                      (data-parallel ring or ps: each rank its own, written at a step\n"
         "                      the ranks agree on; a SIGTERM to any rank stops them all there)\n"
         "  --seed N            seed for initialization, shuffling, dropout, synthetic data\n"
         "                      (default 1)\n"
         "  --help              print this text\n"
         "data-parallel training (CPU, c10d Gloo over TCP; start one process per rank):\n"
         "  --world-size N      ranks in the run (default 1: no distribution)\n"
         "  --rank R            this process's rank, 0..N-1; rank 0 holds the store, reports\n"
         "                      the run's learn_end, verifies and saves the checkpoint\n"
         "  --master HOST:PORT  rank 0's TCPStore address (rank 0 listens on PORT)\n"
         "  --dist ring|ps      ring: bucketed all-reduce of gradients overlapped with backward,\n"
         "                      each rank batch/N examples; ps: rank 0 keeps the parameters and\n"
         "                      applies updates, every rank computes batch/N (default ring)\n"
         "  --ps-async          with ps: rank 0 only serves and applies each worker's gradient\n"
         "                      as it comes (stale); workers 1..N-1 split each epoch, full batch\n"
         "  --dist-timeout S    a rank silent (dead or hung) for S seconds ends every rank with\n"
         "                      an error naming it (default 60)\n"
         "model defaults*:     data set   batch  optimizer  lr      decay\n"
         "  mnist_cnn           idx        128    adam       0.001   0\n"
         "  mnist_mlp           idx        128    rmsprop    0.001   0\n"
         "  cifar10_cnn         cifar10    32     rmsprop    0.0001  1e-6\n"
         "  cifar_small         cifar10    32     adam       0.001   0\n"
         "  bilstm              tokens     32     adam       0.001   0\n"
         "  resnet50            synthetic  32     momentum   0.0125  0\n"
         "data formats: idx: {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz];\n"
         "  cifar10: data_batch_1..5.bin and test_batch.bin, records of 1 label byte (0..9)\n"
         "  + 3072 pixel bytes (CHW); tokens: train.txt and test.txt, one 'LABEL(0|1) ID ID ...'\n"
         "  line per example, fitted to 100 ids (the last 100 kept, left-padded with 0).\n"
         "gen-cifar / gen-tokens write small seeded, learnable data sets of those formats to DIR:\n"
         "  N training examples (default 1000; gen-cifar needs 5) and ceil(N/5) test examples.\n"
         "gen-images writes N seeded PX x PX RGB JPEGs (default 1000 of 224) named img-NNNNNN.jpg.\n"
         "infer flags: inference images/s, p50/p99 latency and peak RSS per batch size:\n"
         "  --model NAME        image model (default resnet50)\n"
         "  --batch LIST        batch sizes (default 1,2,4,8,16,32,64)\n"
         "  --mode sync|async   sync: load a batch, then compute it; async: loader threads fill\n"
         "                      a bounded queue while the model computes (default sync)\n"
         "  --source files|memory  decode JPEGs from --images for every batch, or once up front\n"
         "                      (default files)\n"
         "  --images DIR        JPEGs to read (default ./images; see gen-images)\n"
         "  --iterations N      measured batches per batch size (default 10), after\n"
         "  --warmup N          unmeasured batches (default 1)\n"
         "  --loaders N         async loader threads (default min(4, CPUs))\n"
         "  --queue N           async queue capacity in batches (default 2 x loaders)\n"
         "  --latency-file F    also write every measured latency to F (CSV: level,latency_ms)\n"
         "  --classes, --image-size, --threads, --device, --precision, --seed as for training\n"
         + serving_usage() +
         "stdout carries one JSON event per line: ready, epoch, learn_end, verify, saved\n"
         "  (with --world-size > 1 each carries \"rank\"; only rank 0 emits verify and saved)\n"
         "  (infer: ready, infer per batch size, infer_end; serve: ready, serve_end;\n"
         "  load: load_ready, load_level per level, load_end).\n"
         "exit status: 0 ok, 2 bad usage or bad data, 1 other failure.\n";
}

}  // namespace tsum::workload
