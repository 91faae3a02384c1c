#include "workload/machine/cpus.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

namespace tsum::workload {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> read_text(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::optional<double> read_number(const fs::path& path) {
  auto text = read_text(path);
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  double v = 0;
  if (!(in >> v)) return std::nullopt;
  return v;
}

// cgroup v1: cpu.cfs_quota_us (-1: unlimited) over cpu.cfs_period_us.
std::optional<double> v1_quota(const fs::path& dir) {
  const auto quota = read_number(dir / "cpu.cfs_quota_us");
  const auto period = read_number(dir / "cpu.cfs_period_us");
  if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;
  return *quota / *period;
}

// cgroup v2: cpu.max holds "QUOTA PERIOD" or "max PERIOD".
std::optional<double> v2_quota(const fs::path& dir) {
  const auto text = read_text(dir / "cpu.max");
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  std::string quota;
  double period = 0;
  if (!(in >> quota >> period) || quota == "max" || period <= 0) return std::nullopt;
  try {
    const double q = std::stod(quota);
    if (q <= 0) return std::nullopt;
    return q / period;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The first quota found in `dir` or its ancestors up to `top` (a parent's limit binds children).
template <class Reader>
std::optional<double> quota_upwards(const fs::path& top, fs::path dir, Reader read) {
  std::optional<double> best;
  for (;;) {
    if (auto q = read(dir)) best = best ? std::min(*best, *q) : *q;
    if (dir == top || !dir.has_relative_path() || dir.parent_path() == dir) break;
    dir = dir.parent_path();
    if (dir.string().size() < top.string().size()) break;
  }
  return best;
}

}  // namespace

int affinity_cpu_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  const int n = CPU_COUNT(&set);
  return n > 0 ? n : 1;
}

std::optional<double> cgroup_cpu_quota(const fs::path& cgroup_root,
                                       const std::string& proc_self_cgroup) {
  std::optional<double> best;
  auto keep = [&](std::optional<double> q) {
    if (q) best = best ? std::min(*best, *q) : *q;
  };
  std::istringstream lines(proc_self_cgroup);
  for (std::string line; std::getline(lines, line);) {
    // "ID:CONTROLLERS:PATH"; v2 is "0::PATH".
    const auto first = line.find(':');
    const auto second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    const fs::path relative = fs::path(path).relative_path();
    if (controllers.empty()) {
      keep(quota_upwards(cgroup_root, cgroup_root / relative, v2_quota));
      continue;
    }
    std::istringstream names(controllers);
    for (std::string name; std::getline(names, name, ',');) {
      if (name != "cpu") continue;
      // v1 mounts the cpu controller as cpu/ or as the joint cpu,cpuacct/.
      for (const fs::path& mount : {cgroup_root / "cpu", cgroup_root / controllers}) {
        keep(quota_upwards(mount, mount / relative, v1_quota));
      }
    }
  }
  return best;
}

int usable_cpu_count() {
  int n = affinity_cpu_count();
  const auto self = read_text("/proc/self/cgroup");
  if (self) {
    if (auto quota = cgroup_cpu_quota("/sys/fs/cgroup", *self)) {
      n = std::min(n, static_cast<int>(std::ceil(*quota)));
    }
  }
  return std::max(n, 1);
}

}  // namespace tsum::workload
