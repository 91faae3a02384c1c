// The planner's input: configs (what a machine is) and measured runs (how long each of the 8 phases of t_sum
// took on one). Plain data, shared by the predictor, the planner and the search.
#pragma once

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>

namespace tsum::billing {

// The 8 phases of t_sum, in order.
inline constexpr std::array<std::string_view, 8> kPhaseNames = {"startup", "install", "load_data", "start",
                                                                "learn",   "verify",  "save",      "poweroff"};
enum PhaseIndex : int { kStartup, kInstall, kLoadData, kStart, kLearn, kVerify, kSave, kPoweroff };
using PhaseSeconds = std::array<double, 8>;

inline double t_sum_of(const PhaseSeconds& p) {
  double t = 0;
  for (double s : p) t += s;
  return t;
}

// What a config is: enough to price it and to predict it from runs of similar configs.
struct ConfigSpec {
  std::string config;         // id, unique among candidates
  std::string provider;       // "aws", "local", ...
  std::string instance_type;  // "c6i.2xlarge"
  int cores = 0;              // vCPUs
  int gpus = 0;
  std::string gpu_type;       // "V100"; "" when gpus == 0
  std::string cpu_family;     // the machine family ("c4", "n2", "Standard_D"): learn time is fitted over cores
                              // within one family; "" = the provider's
  double memory_gib = 0;      // per machine; 0 = unknown
  std::string cpu_model;      // where the provider says it ("Intel Xeon E5-2666 v3"); informational
  bool image_cached = false;  // the machine image already holds the framework, so install is short
  // Machines of the type that train together (a multi-node run). Learn time is fitted over every worker,
  // cores (or GPUs) times nodes, as Ernest fits over machines; the price is per machine (the candidate's
  // hourly price is all of them).
  int nodes = 1;

  // The memory of all its machines (0 = unknown).
  double cluster_memory_gib() const { return memory_gib > 0 ? memory_gib * std::max(1, nodes) : 0; }
};

// The family of an instance type, from its name where the catalog or provider names none: the part before
// the first '.' ("c4.large" -> "c4") or '-' ("n2-standard-8" -> "n2"), "Standard_" and its letters on Azure
// ("Standard_D4s_v5" -> "Standard_D"), else the leading letters ("cx22" -> "cx"). A cluster named by its count of
// machines ("4xr3.2xlarge", as a trace names a recorded cluster of 4 r3.2xlarge) is of its machines' family.
inline std::string instance_family(std::string_view type) {
  size_t digits = 0;
  while (digits < type.size() && std::isdigit(static_cast<unsigned char>(type[digits]))) ++digits;
  if (digits > 0 && digits + 1 < type.size() && type[digits] == 'x' &&
      std::isalpha(static_cast<unsigned char>(type[digits + 1])))
    type.remove_prefix(digits + 1);
  if (type.starts_with("Standard_")) {
    size_t end = 9;
    while (end < type.size() && std::isalpha(static_cast<unsigned char>(type[end]))) ++end;
    return std::string(type.substr(0, end));
  }
  if (size_t cut = type.find_first_of(".-"); cut != std::string_view::npos && cut > 0) return std::string(type.substr(0, cut));
  size_t end = 0;
  while (end < type.size() && std::isalpha(static_cast<unsigned char>(type[end]))) ++end;
  return std::string(type.substr(0, end > 0 ? end : type.size()));
}

// The workload being planned: a full run learns `epochs` epochs of `images_per_epoch` images.
// images_per_epoch may be 0 when unknown; partial runs must then report epochs_done.
struct Workload {
  double epochs = 1;
  double images_per_epoch = 0;
};

// One measured run. A partial run (a probe of a few hundred steps) sets images_done or epochs_done: its learn
// phase covers only that much of the workload. Its verify and save phases are not used as measurements.
// A partial run may also report its steady throughput (images per second after the first steps, which pay
// for allocator warm-up and kernel selection); the rest of the workload is then extrapolated at that rate
// instead of scaling the warm-up up with it.
struct MeasuredRun {
  ConfigSpec cfg;
  PhaseSeconds phases{};
  std::optional<double> images_done;
  std::optional<double> epochs_done;
  std::optional<double> steady_images_per_s;
  // What the agent saw of the learn phase: its peak resident memory over the machine's memory (the largest over
  // its nodes; 0..1, or past 1 when it swapped). A run near its machine's memory was memory-bound: the job's
  // working set is larger; one far below it fits. nullopt where nothing was sampled (a trace).
  std::optional<double> memory_used;
  // A probe that did not finish (stopped at its ProbeSpec::max_s, or its job failed): its phases are what it
  // billed, and it measures nothing about the config. failure says why.
  bool failed = false;
  std::string failure;
};

}  // namespace tsum::billing
