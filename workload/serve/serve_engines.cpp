// The libtorch side of `tsum-train serve` (serve.h): engines for the registry's image models and for a user's
// TorchScript file, and the command itself.
//
// Events (stdout, event_writer.h):
//   ready      model, platform, params, threads, device, precision, host, port, max_batch, max_delay_us,
//              channels, height, width, classes, load_s (model load and warm-up)
//   serve_end  seconds, stopped_by (client, signal or duration), requests, rejected, batches, images, batch_mean
#include "workload/serve/serve_engines.h"

#include <malloc.h>
#include <torch/script.h>

#include <atomic>
#include <csignal>
#include <thread>

#include "workload/machine/cpus.h"
#include "workload/models/model_registry.h"

namespace tsum::workload {
namespace {

using Clock = std::chrono::steady_clock;

// Logits of a model run on a channels-last batch, on the host as floats.
std::vector<float> to_host(const torch::Tensor& logits) {
  const torch::Tensor out = logits.to(torch::kCPU, torch::kFloat).contiguous();
  return std::vector<float>(out.data_ptr<float>(), out.data_ptr<float>() + out.numel());
}

// n x H x W x C floats as an NCHW tensor with channels-last strides (no copy), on the placement's device.
torch::Tensor image_batch(const float* images, std::int64_t n, const ModelIo& io, const Placement& placement) {
  const torch::Tensor nhwc = torch::from_blob(const_cast<float*>(images), {n, io.height, io.width, io.channels},
                                              torch::kFloat);
  return nhwc.permute({0, 3, 1, 2}).to(placement.device);
}

class ModuleEngine final : public Engine {
 public:
  ModuleEngine(std::shared_ptr<Model> model, ModelIo io, Placement placement)
      : model_(std::move(model)), io_(std::move(io)), placement_(placement) {}
  const ModelIo& io() const override { return io_; }
  Result<std::vector<float>> run(const float* images, std::int64_t n) override {
    c10::InferenceMode inference;
    AutocastScope autocast(placement_);
    return to_host(model_->forward(image_batch(images, n, io_, placement_)));
  }

 private:
  std::shared_ptr<Model> model_;
  ModelIo io_;
  Placement placement_;
};

class ScriptEngine final : public Engine {
 public:
  ScriptEngine(torch::jit::script::Module module, ModelIo io, Placement placement)
      : module_(std::move(module)), io_(std::move(io)), placement_(placement) {}
  const ModelIo& io() const override { return io_; }
  void set_classes(std::int64_t classes) { io_.classes = classes; }
  Result<std::vector<float>> run(const float* images, std::int64_t n) override {
    c10::InferenceMode inference;
    AutocastScope autocast(placement_);
    const auto out = module_.forward({image_batch(images, n, io_, placement_)});
    if (!out.isTensor()) return make_error(Code::internal, "the TorchScript model did not return a tensor");
    const torch::Tensor logits = out.toTensor();
    if (logits.dim() != 2 || logits.size(0) != n)
      return make_error(Code::internal, "the TorchScript model returned shape " +
                                            c10::str(logits.sizes()) + " for a batch of " + std::to_string(n));
    return to_host(logits);
  }

 private:
  torch::jit::script::Module module_;
  ModelIo io_;
  Placement placement_;
};

Result<std::unique_ptr<Engine>> make_script_engine(const ServeOptions& o) {
  if (o.input_shape.size() != 3)
    return make_error(Code::invalid_argument, "--torchscript needs --input-shape C,H,W (the images it reads)");
  ModelIo io{o.name.empty() ? "model" : o.name, "pytorch_torchscript", o.input_shape[0], o.input_shape[1],
             o.input_shape[2], 0, 0, device_name(o.placement.device)};
  torch::jit::script::Module module;
  try {
    module = torch::jit::load(o.torchscript, o.placement.device);
  } catch (const c10::Error& e) {  // its what() carries libtorch's backtrace: the message's first line is the reason
    const std::string why = e.what_without_backtrace();
    return make_error(Code::invalid_argument,
                      o.torchscript + ": not a TorchScript file: " + why.substr(0, why.find('\n')));
  } catch (const std::exception& e) {
    const std::string why = e.what();
    return make_error(Code::invalid_argument,
                      o.torchscript + ": not a TorchScript file: " + why.substr(0, why.find('\n')));
  }
  module.eval();
  for (const auto& p : module.parameters()) io.params += p.numel();
  auto engine = std::make_unique<ScriptEngine>(std::move(module), io, o.placement);
  // The classes it predicts: from one image of zeros.
  const std::vector<float> zeros(static_cast<std::size_t>(io.image_floats()), 0.0f);
  try {
    engine->set_classes(1);
    c10::InferenceMode inference;
    const auto out = engine->run(zeros.data(), 1);
    if (!out.ok()) return out.error();
    engine->set_classes(static_cast<std::int64_t>(out->size()));
  } catch (const std::exception& e) {
    return make_error(Code::invalid_argument, o.torchscript + ": does not run on a [1, " +
                                                  std::to_string(io.channels) + ", " + std::to_string(io.height) +
                                                  ", " + std::to_string(io.width) + "] image: " + e.what());
  }
  return std::unique_ptr<Engine>(std::move(engine));
}

std::atomic<bool> g_serve_stop{false};
extern "C" void on_serve_signal(int) { g_serve_stop.store(true); }

}  // namespace

Result<std::unique_ptr<Engine>> make_engine(const ServeOptions& o) {
  if (!o.torchscript.empty()) return make_script_engine(o);
  if (o.model == "delay") {
    const auto& s = o.input_shape;
    // Small images by default (3 x 8 x 8 floats, under one TCP segment a request): the network's share of a
    // request is then its round trip alone, whatever the congestion control paces (docs/serving.md).
    ModelIo io{o.name.empty() ? "delay" : o.name, "fixed_delay", s.empty() ? 3 : s[0], s.empty() ? 8 : s[1],
               s.empty() ? 8 : s[2], o.classes > 0 ? o.classes : 10, 0, "cpu"};
    return make_fixed_delay_engine(io, std::chrono::microseconds(static_cast<std::int64_t>(o.service_ms * 1000)));
  }
  auto model = make_model(o.model, {o.classes, o.image_size, 0});
  if (!model.ok())  // serving knows one more model than training: the fixed delay
    return make_error(model.error().code, model.error().detail.ends_with(")")
                                              ? model.error().detail.substr(0, model.error().detail.size() - 1) +
                                                    ", and for serve: delay)"
                                              : model.error().detail);
  const InputShape shape = (*model)->input_shape();
  if (shape.kind != InputKind::image || (shape.channels != 1 && shape.channels != 3))
    return make_error(Code::invalid_argument, "serve: model " + o.model + " does not read RGB or grey images");
  if (!o.checkpoint.empty()) {
    try {
      torch::load(*model, o.checkpoint);
    } catch (const std::exception& e) {
      return make_error(Code::invalid_argument, o.checkpoint + ": not a checkpoint of " + o.model + ": " + e.what());
    }
  }
  (*model)->eval();
  try {
    (*model)->to(o.placement.device);
  } catch (const std::exception& e) {
    return make_error(Code::unavailable, std::string("cannot move the model: ") + e.what());
  }
  (*model)->fold_for_inference();
  ModelIo io{o.name.empty() ? o.model : o.name, "pytorch_libtorch", shape.channels, shape.height, shape.width,
             shape.classes, (*model)->parameter_count(), device_name(o.placement.device)};
  return std::unique_ptr<Engine>(std::make_unique<ModuleEngine>(std::move(*model), io, o.placement));
}

Status run_serve(const ServeOptions& o, EventWriter& events) {
  const auto begin = Clock::now();
  if (auto st = check_placement(o.placement); !st.ok()) return st;
  // The model runs on the batcher's thread, not on main. glibc gives such a thread an arena of its own, whose
  // heaps (64 MiB at most) cannot hold a large batch's activations: each comes from a fresh mmap and page-faults
  // in again every batch (ResNet-50 at batch 16 ran 2.8x slower than on main). One arena, main's, keeps them
  // mapped as main.cpp's keep_freed_memory_mapped intends.
  mallopt(M_ARENA_MAX, 1);
  // Only the batcher's thread computes with `threads`: main builds the model on one, so OpenMP makes no pool for
  // main (its workers would wait beside the batcher's; under OMP_WAIT_POLICY=active they spin for good).
  // The threads are shared among the instances: each computes with threads / instances (at least 1).
  const int threads = o.threads > 0 ? o.threads : usable_cpu_count();
  const int per_instance = std::max(1, threads / o.instances);
  torch::set_num_threads(1);
  std::vector<std::unique_ptr<Engine>> engines;
  std::vector<Engine*> instances;
  for (int i = 0; i < o.instances; ++i) {
    torch::manual_seed(o.seed);  // every instance the same weights: an answer does not depend on which ran it
    auto engine = make_engine(o);
    if (!engine.ok()) return engine.error();
    engines.push_back(std::move(*engine));
    instances.push_back(engines.back().get());
  }
  const ModelIo& io = engines.front()->io();
  InferenceServer server(instances, o.server);
  // Warm-up: the first runs of a batch size allocate and pick kernels; the measured load should not pay for it.
  // On each instance's own thread, whose thread pools the requests then find made.
  Status warm;
  try {
    server.on_model_threads([&](Engine& engine) {
      torch::set_num_threads(per_instance);
      const std::vector<float> zeros(static_cast<std::size_t>(io.image_floats() * o.server.batching.max_batch), 0.0f);
      for (std::int64_t i = 0; i < o.warmup && warm.ok(); ++i) {
        for (const std::int64_t b : {std::int64_t{1}, o.server.batching.max_batch}) {
          if (auto out = engine.run(zeros.data(), b); !out.ok()) warm = out.error();
        }
      }
    });
  } catch (const std::exception& e) {
    return make_error(Code::internal, std::string("warm-up failed: ") + e.what());
  }
  if (!warm.ok()) return warm;
  if (auto st = server.start(); !st.ok()) return st;
  struct sigaction sa {};
  sa.sa_handler = on_serve_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  const auto ready = Clock::now();
  events.emit("ready", {{"model", io.name},
                        {"platform", io.platform},
                        {"params", io.params},
                        {"threads", std::int64_t{threads}},
                        {"instances", std::int64_t{o.instances}},
                        {"threads_per_instance", std::int64_t{per_instance}},
                        {"device", io.device},
                        {"precision", std::string(precision_name(o.placement.precision))},
                        {"host", o.server.host},
                        {"port", std::int64_t{server.port()}},
                        {"max_batch", o.server.batching.max_batch},
                        {"max_delay_us", static_cast<std::int64_t>(o.server.batching.max_delay.count())},
                        {"channels", io.channels},
                        {"height", io.height},
                        {"width", io.width},
                        {"classes", io.classes},
                        {"load_s", std::chrono::duration<double>(ready - begin).count()}});
  while (!g_serve_stop.load() && !server.stop_requested() &&
         (o.duration_s <= 0 || std::chrono::duration<double>(Clock::now() - ready).count() < o.duration_s))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  server.stop();
  const auto s = server.stats();
  events.emit("serve_end", {{"seconds", std::chrono::duration<double>(Clock::now() - ready).count()},
                            {"stopped_by", std::string(server.stop_requested() ? "client" : g_serve_stop.load() ? "signal" : "duration")},
                            {"requests", s.requests},
                            {"rejected", s.rejected},
                            {"batches", s.batches},
                            {"images", s.images},
                            {"batch_mean", s.batches == 0 ? 0.0 : static_cast<double>(s.images) / s.batches}});
  return {};
}

}  // namespace tsum::workload
