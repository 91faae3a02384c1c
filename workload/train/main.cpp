// tsum-train: trains a model (model_registry.h) on a data set (dataset.h) and reports JSON-line
// events on stdout; `infer` measures inference throughput per batch size (infer.h);
// `serve` answers inference requests over HTTP and `load` measures such a server (serve.h, load_gen.h);
// `gen-cifar` / `gen-tokens` / `gen-images` write small generated data sets (data_gen.h,
// image_files.h); `probe-gpu` measures what a GPU achieves (gpu_probe.h).
// See options.h for flags, event_writer.h for the event contract, train_run.h for the phases.
#include <malloc.h>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <algorithm>

#include "workload/data/data_gen.h"
#include "workload/train/event_writer.h"
#include "workload/infer/image_files.h"
#include "workload/machine/gpu_probe.h"
#include "workload/infer/infer.h"
#include "workload/train/options.h"
#include "workload/serve/serve_engines.h"
#include "workload/train/train_run.h"

namespace {

// Keeps freed tensor memory in the heap. By default glibc serves blocks above its (adaptive) mmap
// threshold with fresh mmaps and trims the heap top on free, so every training step page-faults in
// its ~40 MB of activations and gradients again (about 11k faults and 15% of an mnist_cnn step).
// Blocks up to 1 GiB now come from the heap and stay mapped. (32 MiB caps only glibc's adaptive threshold, not
// mallopt's: at 32 MiB, ResNet-50's batch-16 activations, 51 MB a tensor, were still mmapped and faulted in again
// every batch: `infer --batch 16` ran at 14-15.6 img/s with 849k page faults, 35-38 img/s with 144k at 1 GiB.)
void keep_freed_memory_mapped() {
  constexpr int kMmapThreshold = 1 << 30;
  constexpr int kTrimThreshold = 1 << 30;
  mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
  mallopt(M_TRIM_THRESHOLD, kTrimThreshold);
}

void print_error(const tsum::Status& status) {
  std::fprintf(stderr, "tsum-train: %s: %s\n", std::string(tsum::code_name(status.code())).c_str(),
               status.error().detail.c_str());
}

// gen-cifar / gen-tokens / gen-images: writes the files and says where on stdout.
int generate(const std::vector<std::string>& args) {
  using namespace tsum::workload;
  auto options = parse_gen_options(args);
  if (!options.ok()) {
    std::fprintf(stderr, "tsum-train: %s\n%s", options.error().detail.c_str(), usage().c_str());
    return 2;
  }
  if (options->command == "gen-images") {
    const auto status = write_image_files(options->dir, options->n, options->size, options->seed);
    if (!status.ok()) {
      print_error(status);
      return exit_code_for(status);
    }
    std::printf("gen-images: wrote %lld %lldx%lld JPEGs to %s\n",
                static_cast<long long>(options->n), static_cast<long long>(options->size),
                static_cast<long long>(options->size), options->dir.c_str());
    return 0;
  }
  const auto status = options->command == "gen-cifar"
                          ? write_cifar_files(options->dir, options->n, options->seed)
                          : write_token_files(options->dir, options->n, options->seed);
  if (!status.ok()) {
    print_error(status);
    return exit_code_for(status);
  }
  const auto train = static_cast<long long>(options->n);
  const auto test = static_cast<long long>(generated_test_count(options->n));
  std::printf("%s: wrote %lld training and %lld test examples to %s\n", options->command.c_str(),
              train, test, options->dir.c_str());
  return 0;
}

int infer(const std::vector<std::string>& args) {
  using namespace tsum::workload;
  auto options = parse_infer_options(args);
  if (!options.ok()) {
    std::fprintf(stderr, "tsum-train: %s\n%s", options.error().detail.c_str(), usage().c_str());
    return 2;
  }
  EventWriter events(stdout);
  const auto status = run_infer(*options, events);
  if (!status.ok()) print_error(status);
  return exit_code_for(status);
}

// serve: answers inference requests until SIGTERM (serve.h); load: measures such a server (load_gen.h).
template <class Options, class Run>
int run_command(tsum::Result<Options> options, Run run) {
  using namespace tsum::workload;
  if (!options.ok()) {
    std::fprintf(stderr, "tsum-train: %s\n%s", options.error().detail.c_str(), usage().c_str());
    return 2;
  }
  EventWriter events(stdout);
  const auto status = run(*options, events);
  if (!status.ok()) print_error(status);
  return exit_code_for(status);
}

// probe-gpu: one gpu_probe event (gpu_probe.h).
int probe_gpu(const std::vector<std::string>& args) {
  using namespace tsum::workload;
  auto options = parse_probe_options(args);
  if (!options.ok()) {
    std::fprintf(stderr, "tsum-train: %s\n%s", options.error().detail.c_str(), usage().c_str());
    return 2;
  }
  EventWriter events(stdout);
  const auto status = run_gpu_probe(*options, events);
  if (!status.ok()) print_error(status);
  return exit_code_for(status);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tsum::workload;
  keep_freed_memory_mapped();
  const std::vector<std::string> args(argv + 1, argv + argc);
  // --help anywhere, after any subcommand, prints every command's flags and exits 0.
  if (std::find(args.begin(), args.end(), "--help") != args.end() ||
      std::find(args.begin(), args.end(), "-h") != args.end()) {
    std::fputs(usage().c_str(), stdout);
    return 0;
  }
  try {
    if (is_gen_command(args)) return generate(args);
    if (is_infer_command(args)) return infer(args);
    if (is_probe_command(args)) return probe_gpu(args);
    if (is_serve_command(args)) return run_command(parse_serve_options(args), run_serve);
    if (is_load_command(args)) return run_command(parse_load_options(args), run_load);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tsum-train: internal: %s\n", e.what());
    return 1;
  }
  auto options = parse_options(args);
  if (!options.ok()) {
    std::fprintf(stderr, "tsum-train: %s\n%s", options.error().detail.c_str(), usage().c_str());
    return 2;
  }
  if (options->help) {
    std::fputs(usage().c_str(), stdout);
    return 0;
  }
  try {
    EventWriter events(stdout);
    install_stop_handler();
    const auto status = run_training(*options, events);
    if (!status.ok()) print_error(status);
    return exit_code_for(status);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tsum-train: internal: %s\n", e.what());
    return 1;
  }
}
