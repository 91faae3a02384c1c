// An experiment's workload: what every run of it executes, as tsum-train flags. Parsed from the request's
// "workload" object; unknown fields, unknown names and values out of range are invalid_argument naming the
// field ("workload.optimizer: 'adamw' is not an optimizer (sgd, momentum, ...)").
//
//   {"kind": "train",                      train (default) or infer (the inference sweep, measured as learn)
//    "model": "mnist_cnn",                 mnist_cnn, mnist_mlp, cifar10_cnn, cifar_small, bilstm, resnet50
//    "dataset": "fashion-mnist",           a registered data set (its format must be the model's: idx for the
//                                          MNIST models, cifar10-bin for the CIFAR ones, tokens for bilstm;
//                                          resnet50 trains on synthetic data; an inference sweep may read an
//                                          images data set, else generates its JPEGs), or
//                                          {"url", "sha256", "format", "name"} that the agent fetches itself
//    "optimizer": "adam", "lr": 0.001, "decay": 0, "augment": false,
//    "precision": "fp32",                  fp32, bf16 or fp16 (fp16: cuda only)
//    "device": "cpu",                      cpu or cuda; absent: cuda when the offer has GPUs, else cpu
//    "epochs": 1, "batch": 128, "limit": 2000, "test_limit": 1000, "threads": 2,
//    "image": "REGISTRY/tsum-train:TAG"}   the docker runtime's image
//   infer: {"kind": "infer", "model": "resnet50", "batch": [1, 2, 4, 8], "mode": "sync"|"async",
//           "source": "memory"|"files", "iterations": 10}   (batch is the sweep's list, not alternatives)
//   serve: {"kind": "serve", "model": "resnet50",       a run of two machines (docs/serving.md): node 0 serves
//           "max_batch": 8, "max_delay_ms": 2,          the model (tsum-train serve, dynamic batching), node 1
//           "batch": 1, "input": "fp32"|"jpeg",         loads it (tsum-train load: images per request, what
//           "concurrency": [1, 2, 4, 8] or "rate": [10, 20], "arrivals": "poisson"|"constant",
//           "bound_ms": 100, "window_s": 2,             it sends, the sweep, the p99 bound, the window)
//           "instances": 1}                             the model's copies, each with threads / instances
//          model "delay" with "service_ms": 20 is a server whose every batch takes that long (the harness's own
//          overhead, the network's share)
//          (concurrency and rate are the sweep's lists, not alternatives)
//
//   a user's job: {"image": "REF", "command": ["python3", "train.py"], "env": {"K": "V"}, "dataset": "NAME"}
//     ("kind": "job", implied by the command): the command runs in the image with the data set at /tsum/data
//     (read-only), /tsum/out writable (every file there is uploaded in save) and TSUM_EVENTS, a path where it
//     may write its phase marks as JSON lines; it always runs in Docker.
//   a folder job: {"workdir": "sha256:HEX", "setup": "pip install -r requirements.txt", "run": "python3 train.py",
//     "image": "REF" (optional), "env", "dataset"} ("kind": "job"): the folder (uploaded with POST /v1/workdirs;
//     `tsumd experiment create -f` packs the path a spec file names) is unpacked on the machine, `setup` runs in
//     it during install and `run` during learn, in the image when one is named (the folder at /tsum/job), else
//     on the machine itself. Output is shipped live (GET /v1/runs/{id}/logs).
//
// Any other field may be a list of alternatives (command and env never are): the workload expands to the product of its lists (fields in
// the order above), e.g. {"optimizer": ["sgd", "adam"], "lr": [0.01, 0.001]} is 4 workloads. Each run of the
// experiment carries its own expanded workload.
#pragma once

#include <nlohmann/json.hpp>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tsum::daemon {

struct Workload {
  std::string kind = "train";  // train | infer | serve | job
  std::string model = "mnist_cnn";
  std::string dataset = "fashion-mnist";  // a registered data set's name (or the URL one's, below); empty: none
                                          // (default: fashion-mnist for the MNIST models, none for resnet50)
  std::string dataset_url;  // a data set the agent fetches itself, with its sha256 and format; empty: none
  std::string dataset_sha256;
  std::string dataset_format;
  std::optional<std::string> optimizer;
  std::optional<double> lr;
  std::optional<double> decay;
  bool augment = false;
  std::string precision = "fp32";
  std::optional<std::string> device;  // cpu | cuda; absent: cuda when the offer has GPUs
  int epochs = 1;
  std::optional<int> limit;
  std::optional<int> test_limit;
  std::optional<int> batch;  // train
  std::optional<int> threads;  // default: the instance's CPUs
  std::vector<int> batches;    // infer: the sweep
  std::string mode = "sync";   // infer: sync | async
  std::string source = "memory";  // infer: memory | files
  std::optional<int> iterations;  // infer: measured batches per batch size
  int max_batch = 8;                // serve: the server's dynamic batching
  double max_delay_ms = 0;
  int instances = 1;                // serve: copies of the model, each on its own thread (threads / instances)
  std::string input = "fp32";       // serve: what the client sends, fp32 tensors or jpeg images
  std::vector<int> concurrency;     // serve: the concurrency sweep (default 1, 2, 4, 8), or
  std::vector<double> rates;        // the request-rate sweep (requests/s)
  std::string arrivals = "poisson";  // serve, rate sweep: poisson | constant
  std::optional<double> bound_ms;   // serve: the p99 bound that stops the sweep
  std::optional<double> window_s;   // serve: the measurement window
  std::optional<double> service_ms;  // serve, model "delay": the time each batch takes
  std::string image;  // the container image: tsum-train's (the docker runtime), or the job's
  std::vector<std::string> command;          // job: the program and its arguments, run in `image`
  std::map<std::string, std::string> env;    // job: its environment (besides TSUM_EVENTS)
  std::string workdir_sha256;  // folder job: the folder uploaded (POST /v1/workdirs), by its sha256
  std::string setup;           // folder job: the shell line install runs in the folder (cached per machine)
  std::string run;             // folder job: the shell line learn runs in the folder

  // The tsum-train arguments for this workload on a machine with `gpus` GPUs (without --data and --checkpoint;
  // for infer, those of the "infer" subcommand, without --images).
  std::string train_args(int gpus = 0) const;
  // serve: the load client's `tsum-train load` flags (without --url and --images).
  std::string load_args() const;
  // The device a run uses on an offer with `gpus` GPUs.
  std::string device_on(int gpus) const { return device.value_or(gpus > 0 ? "cuda" : "cpu"); }
  // The data set format the model reads (idx, cifar10-bin, tokens); empty when it reads none (resnet50's
  // synthetic data, the inference sweep's and the serving client's generated images).
  std::string wanted_format() const;
  nlohmann::json to_json() const;
};

inline constexpr std::string_view kModels[] = {"mnist_cnn", "mnist_mlp", "cifar10_cnn", "cifar_small", "bilstm",
                                               "resnet50"};
inline constexpr std::string_view kOptimizers[] = {"sgd", "momentum", "nesterov", "rmsprop",
                                                   "adam", "adagrad", "adadelta", "nadam"};

// The request's "workload" object, its lists expanded: at least one workload, at most `max` (invalid_argument
// past it). `varied` gets the fields that take more than one value, in expansion order.
Result<std::vector<Workload>> expand_workload(const nlohmann::json& j, size_t max,
                                              std::vector<std::string>* varied = nullptr);

// invalid_argument naming the model and the data set when a data set of `format` is not what w reads.
Status dataset_fits(const Workload& w, const std::string& format);

// The fields of `w` named in `fields`, as an object (e.g. {"optimizer": "adam"}): what tells a run's workload
// apart from the experiment's others.
nlohmann::json workload_fields(const Workload& w, const std::vector<std::string>& fields);

}  // namespace tsum::daemon
