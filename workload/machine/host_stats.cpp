#include "workload/machine/host_stats.h"

#include <cmath>
#include <fstream>
#include <string>

namespace tsum::workload {

CpuJiffies cpu_jiffies() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  in >> cpu;
  CpuJiffies j;
  std::int64_t idle = 0;
  // user nice system idle iowait irq softirq steal (guest time is already in user)
  for (int i = 0; i < 8; ++i) {
    std::int64_t v = 0;
    if (!(in >> v)) break;
    j.total += v;
    if (i == 3 || i == 4) idle += v;
  }
  j.busy = j.total - idle;
  return j;
}

double busy_pct(const CpuJiffies& before, const CpuJiffies& after) {
  const auto total = after.total - before.total;
  if (total <= 0) return std::nan("");
  return 100.0 * static_cast<double>(after.busy - before.busy) / static_cast<double>(total);
}

std::int64_t proc_kib_bytes(const char* file, std::string_view key) {
  std::ifstream in(file);
  std::string k;
  while (in >> k) {
    if (k == key) {
      std::int64_t v = 0;
      in >> v;
      return v * 1024;
    }
    in.ignore(1 << 12, '\n');
  }
  return 0;
}

}  // namespace tsum::workload
