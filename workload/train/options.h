// Command-line options of tsum-train.
//
//   tsum-train [--model mnist_cnn] [--dataset KIND] [--data DIR] [--epochs 1] [--limit N]
//              [--test-limit N] [--batch N] [--lr X] [--optimizer NAME] [--decay X] [--augment]
//              [--classes N] [--image-size N] [--threads N] [--device cpu|cuda[:N]]
//              [--precision fp32|bf16|fp16] [--checkpoint PATH] [--seed 1] [--help]
//              [--state PATH] [--checkpoint-every SECONDS] [--resume PATH]
//              [--world-size N --rank R --master HOST:PORT [--dist ring|ps] [--ps-async]
//               [--dist-timeout SECONDS]]
//   tsum-train gen-cifar DIR [--n 1000] [--seed 1]
//   tsum-train gen-tokens DIR [--n 1000] [--seed 1]
//
// Both "--flag value" and "--flag=value" are accepted; --augment and --help take no value. Flags
// left out that have a per-model default (data set, batch, optimizer, lr, decay) are unset here
// and resolved by plan_training (train_run.h). Names are checked later by their registries; this
// parser checks syntax and ranges only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "workload/train/device.h"
#include "workload/infer/load_gen.h"
#include "workload/serve/serve.h"

namespace tsum::workload {

// Data-parallel training over c10d (distributed.h): `world_size` processes, one per rank, meet at
// rank 0's TCPStore on `master`. world_size 1 is a plain single-process run.
enum class DistMode { ring, ps };

struct DistOptions {
  int world_size = 1;
  int rank = 0;
  std::string master_host;  // --master HOST:PORT; rank 0 listens there
  std::uint16_t master_port = 0;
  DistMode mode = DistMode::ring;
  bool ps_async = false;
  double timeout_s = 60.0;  // a rank silent this long ends every rank
};

struct Options {
  std::string model = "mnist_cnn";
  std::optional<std::string> dataset;   // default: the model's
  std::optional<std::string> data_dir;  // default: the data set's
  std::int64_t epochs = 1;
  std::int64_t limit = 0;       // 0: all training examples (synthetic: 256)
  std::int64_t test_limit = 0;  // 0: all test examples (synthetic: 64)
  std::optional<std::int64_t> batch;
  std::optional<double> lr;
  std::optional<std::string> optimizer;
  std::optional<double> decay;
  bool augment = false;
  std::int64_t classes = 0;     // 0: the model's
  std::int64_t image_size = 0;  // 0: the model's
  int threads = 0;              // 0: usable_cpu_count() (cpus.h)
  Placement placement;          // --device, --precision
  std::string checkpoint = "model.pt";
  // Checkpoints of the training state (train_state.h), to resume from: written to `state` every
  // `checkpoint_every` seconds (0: never on a timer) and when SIGTERM arrives (then tsum-train
  // exits with kExitStopped). `resume`: go on from such a file.
  std::string state = "state.pt";
  double checkpoint_every = 0.0;
  std::optional<std::string> resume;
  std::uint64_t seed = 1;
  bool help = false;
  DistOptions dist;
};

// Parses argv[1..]. invalid_argument for an unknown flag, a missing value, or a bad value; the
// detail names the flag.
Result<Options> parse_options(const std::vector<std::string>& args);

// Checks the distributed flags against each other and the plan's global batch: invalid_argument
// (exit 2) for a rank outside [0, world size), a missing --master, --dist/--ps-async without
// --world-size > 1, a batch not divisible by the world size (ring, ps sync), --ps-async without ps,
// a non-CPU device or fp16 with more than one rank.
Status check_dist_options(const Options& options, std::int64_t batch);

// A data generator subcommand: gen-cifar, gen-tokens or gen-images.
struct GenOptions {
  std::string command;  // "gen-cifar", "gen-tokens" or "gen-images"
  std::string dir;
  std::int64_t n = 1000;
  std::int64_t size = 224;  // gen-images: side in pixels
  std::uint64_t seed = 1;
};

// `tsum-train infer`: inference throughput and latency per batch size (infer.h).
enum class InferMode { sync, async };
enum class InferSource { files, memory };

struct InferOptions {
  std::string model = "resnet50";
  std::vector<std::int64_t> batches = {1, 2, 4, 8, 16, 32, 64};
  InferMode mode = InferMode::sync;
  InferSource source = InferSource::files;
  std::string images_dir = "images";  // JPEGs (gen-images)
  std::int64_t iterations = 10;       // measured batches per batch size
  std::int64_t warmup = 1;            // unmeasured batches first
  int loaders = 0;                    // async loader threads; 0: min(4, usable CPUs)
  std::int64_t queue = 0;             // async queue capacity in batches; 0: 2 x loaders
  std::int64_t classes = 0;
  std::int64_t image_size = 0;
  int threads = 0;
  Placement placement;
  std::uint64_t seed = 1;
  std::string latency_file;  // non-empty: every measured latency as CSV (latency_file.h)
};

// `tsum-train serve`: a model answering inference requests over HTTP (serve.h). --model is a registry image model
// or "delay" (a fixed service time, batcher.h); --torchscript a user's TorchScript file instead.
struct ServeOptions {
  std::string model = "resnet50";
  std::string torchscript;                // a TorchScript file: served as "model" unless --name
  std::string checkpoint;                 // a registry model's trained weights (training's --checkpoint file)
  std::string name;                       // the name it is served under (default: --model, or "model")
  std::vector<std::int64_t> input_shape;  // C,H,W: for --torchscript and delay (delay default 3,8,8)
  std::int64_t classes = 0;               // resnet50 and delay (delay default 10)
  std::int64_t image_size = 0;
  double service_ms = 10.0;               // delay: the time each batch takes
  std::int64_t warmup = 3;                // unmeasured runs of batch 1 and of max_batch before "ready"
  double duration_s = 0.0;                // 0: until SIGTERM or SIGINT
  ServerConfig server;
  int threads = 0;
  int instances = 1;  // copies of the model, each on a thread of its own with threads / instances
  Placement placement;
  std::uint64_t seed = 1;
};

bool is_serve_command(const std::vector<std::string>& args);
Result<ServeOptions> parse_serve_options(const std::vector<std::string>& args);

// `tsum-train load`: the load generator (load_gen.h).
bool is_load_command(const std::vector<std::string>& args);
Result<LoadOptions> parse_load_options(const std::vector<std::string>& args);

// True when args[0] is "infer".
bool is_infer_command(const std::vector<std::string>& args);

// Parses args[1..] of `infer`. invalid_argument naming the flag for anything malformed (batch
// lists must be positive integers separated by commas).
Result<InferOptions> parse_infer_options(const std::vector<std::string>& args);

// True when argv[1] names a generator subcommand.
bool is_gen_command(const std::vector<std::string>& args);

// Parses argv[1..] of a generator subcommand (args[0] is the command). invalid_argument for a
// missing DIR, an unknown flag or a bad value.
Result<GenOptions> parse_gen_options(const std::vector<std::string>& args);

// Usage text, one flag per line.
std::string usage();

}  // namespace tsum::workload
