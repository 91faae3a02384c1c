#include "workload/infer/latency_file.h"

#include <cstdio>

namespace tsum::workload {

Result<LatencyFile> LatencyFile::create(const std::string& path) {
  LatencyFile f;
  if (path.empty()) return f;
  f.path_ = path;
  f.out_.open(path, std::ios::out | std::ios::trunc);
  f.out_ << "level,latency_ms\n";
  if (!f.out_.flush()) return make_error(Code::unavailable, "cannot write the latency file " + path);
  return f;
}

Status LatencyFile::add(std::string_view level, const std::vector<double>& seconds) {
  if (path_.empty()) return {};
  char ms[32];
  for (const double s : seconds) {
    std::snprintf(ms, sizeof ms, "%.6f", s * 1e3);
    out_ << level << ',' << ms << '\n';
  }
  if (!out_.flush()) return make_error(Code::unavailable, "cannot write the latency file " + path_);
  return {};
}

}  // namespace tsum::workload
