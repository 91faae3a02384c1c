// What a host is doing, from /proc: for the server's GET /v2/tsum/host and the load generator's own samples.
#pragma once

#include <cstdint>
#include <string_view>

namespace tsum::workload {

// This host's CPU time in jiffies since boot, from /proc/stat's first line: busy (all but idle and iowait) and
// total. The busy share between two readings is (busy1 - busy0) / (total1 - total0).
struct CpuJiffies {
  std::int64_t busy = 0;
  std::int64_t total = 0;
};
CpuJiffies cpu_jiffies();

// Percent of the CPU time between two readings that was busy; NaN when no time passed.
double busy_pct(const CpuJiffies& before, const CpuJiffies& after);

// A "Key:  N kB" value of a /proc file (/proc/self/status's VmRSS:, /proc/meminfo's MemAvailable:) in bytes; 0
// when absent.
std::int64_t proc_kib_bytes(const char* file, std::string_view key);

}  // namespace tsum::workload
