// Default thread count: the affinity mask capped by the cgroup CPU quota, read from fake cgroup
// trees (v1 and v2) laid out like /sys/fs/cgroup.
#include <doctest/doctest.h>
#include <sched.h>

#include <fstream>

#include "temp_dir.h"
#include "workload/machine/cpus.h"

namespace tw = tsum::workload;
namespace fs = std::filesystem;

namespace {

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

}  // namespace

TEST_CASE("cpus: the affinity mask size") {
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(sched_getaffinity(0, sizeof(set), &set) == 0);
  CHECK(tw::affinity_cpu_count() == CPU_COUNT(&set));
  CHECK(tw::usable_cpu_count() >= 1);
  CHECK(tw::usable_cpu_count() <= tw::affinity_cpu_count());
}

TEST_CASE("cpus: cgroup v1 quota of the process's own cgroup, or the mount root's") {
  tw::testing::TempDir dir;
  const fs::path root = dir.file("cg");
  write(root / "cpu/job/cpu.cfs_quota_us", "150000\n");
  write(root / "cpu/job/cpu.cfs_period_us", "100000\n");
  auto q = tw::cgroup_cpu_quota(root, "2:cpuacct:/job\n1:cpu:/job\n0::/\n");
  REQUIRE(q.has_value());
  CHECK(*q == doctest::Approx(1.5));

  // Inside a container the listed path is the host's; the mount root holds the limit.
  write(root / "cpu/cpu.cfs_quota_us", "300000\n");
  write(root / "cpu/cpu.cfs_period_us", "100000\n");
  q = tw::cgroup_cpu_quota(root, "1:cpu:/docker/abc\n");
  REQUIRE(q.has_value());
  CHECK(*q == doctest::Approx(3.0));
  // A parent's tighter limit binds its children.
  write(root / "cpu/job/cpu.cfs_quota_us", "500000\n");
  q = tw::cgroup_cpu_quota(root, "1:cpu:/job\n");
  CHECK(*q == doctest::Approx(3.0));
}

TEST_CASE("cpus: joint cpu,cpuacct mounts and unlimited quotas") {
  tw::testing::TempDir dir;
  const fs::path root = dir.file("cg");
  write(root / "cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  write(root / "cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  CHECK_FALSE(tw::cgroup_cpu_quota(root, "3:cpu,cpuacct:/\n").has_value());
  write(root / "cpu,cpuacct/cpu.cfs_quota_us", "50000\n");
  auto q = tw::cgroup_cpu_quota(root, "3:cpu,cpuacct:/\n");
  REQUIRE(q.has_value());
  CHECK(*q == doctest::Approx(0.5));
  CHECK_FALSE(tw::cgroup_cpu_quota(root, "garbage\n").has_value());
  CHECK_FALSE(tw::cgroup_cpu_quota(dir.file("missing"), "1:cpu:/\n").has_value());
}

TEST_CASE("cpus: cgroup v2 cpu.max") {
  tw::testing::TempDir dir;
  const fs::path root = dir.file("cg");
  write(root / "user.slice/cpu.max", "max 100000\n");
  CHECK_FALSE(tw::cgroup_cpu_quota(root, "0::/user.slice\n").has_value());
  write(root / "user.slice/cpu.max", "250000 100000\n");
  auto q = tw::cgroup_cpu_quota(root, "0::/user.slice\n");
  REQUIRE(q.has_value());
  CHECK(*q == doctest::Approx(2.5));
}
