// --latency-file of `tsum-train infer` and `tsum-train load`: every measured latency as one CSV row, so that the
// samples of several runs can be pooled. A p99 is only as good as the samples above it: one run of 400 has 4, the
// pooled samples of five such runs 20 (bench/serve.sh judges its p99 goal on pooled samples).
//
// Format: the header "level,latency_ms", then one row per measured sample in the order measured; level names the
// run's level ("batch=4" for infer, "concurrency=2" or "rate=20" for load).
#pragma once

#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tsum::workload {

class LatencyFile {
 public:
  // Creates (truncates) `path` and writes the header; an empty path gives a file that writes nothing.
  // unavailable when the file cannot be created.
  static Result<LatencyFile> create(const std::string& path);

  // Appends one row per latency (seconds, written in ms). unavailable when the write fails.
  Status add(std::string_view level, const std::vector<double>& seconds);

 private:
  std::string path_;
  std::ofstream out_;
};

}  // namespace tsum::workload
