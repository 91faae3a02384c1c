// The room workload/machine/ owns what the machine has and does: usable CPUs, GPUs (the probe and NVML, tsum-gpustat)
// and host statistics. It calls common/ and train/ (the device).
//
// How many CPUs this process may use: the affinity mask, capped by the cgroup's CPU quota
// (cgroup v1 cpu.cfs_quota_us / cpu.cfs_period_us, or v2 cpu.max). A container limited to 1.5 CPUs
// on a 64-core host gets 2 threads, not 64 (and never hardware_concurrency()/2).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace tsum::workload {

// CPUs in this process's affinity mask (sched_getaffinity), at least 1.
int affinity_cpu_count();

// The CPU quota of the cgroup named in `proc_self_cgroup` (the text of /proc/self/cgroup), read
// under `cgroup_root` (normally /sys/fs/cgroup): quota/period in CPUs, or nullopt when unlimited
// or unreadable. Looks at the process's own cgroup directory first, then the hierarchy's root
// (inside a container the listed path is often the host's).
std::optional<double> cgroup_cpu_quota(const std::filesystem::path& cgroup_root,
                                       const std::string& proc_self_cgroup);

// min(affinity CPUs, ceil(cgroup quota)), at least 1: the default thread count.
int usable_cpu_count();

}  // namespace tsum::workload
