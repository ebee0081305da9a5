// The default thread count (core/cpu_topology.h): one per physical core of
// the usable CPUs, the slowest class of a mixed CPU left out, read from a
// sysfs tree that each test writes for the machine it describes.
#include "core/cpu_topology.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace llmpack {
namespace {

namespace fs = std::filesystem;

// A folder of files written by a test, removed at its end; each has a name
// of its own, so a test may hold several.
class TempTree {
 public:
  TempTree() {
    static int made = 0;
    root_ = fs::temp_directory_path() / ("llmpack_cpu_topology_" + std::to_string(::getpid()) + "_" +
                                         std::to_string(made++));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~TempTree() { fs::remove_all(root_); }
  TempTree(const TempTree&) = delete;
  TempTree& operator=(const TempTree&) = delete;
  // Writes `text` and a newline to root/<path>.
  void write(const std::string& path, const std::string& text) {
    fs::create_directories((root_ / path).parent_path());
    std::ofstream(root_ / path) << text << "\n";
  }
  std::string root() const { return root_.string(); }

 private:
  fs::path root_;
};

// A made-up /sys/devices/system/cpu.
class FakeSysfs {
 public:
  // Writes `value` to cpuN/<file>.
  void set(int cpu, const std::string& file, long value) {
    tree_.write("cpu" + std::to_string(cpu) + "/" + file, std::to_string(value));
  }
  void core(int cpu, int package, int core) {
    set(cpu, "topology/physical_package_id", package);
    set(cpu, "topology/core_id", core);
  }
  std::string dir() const { return tree_.root(); }
  int threads(const std::vector<int>& cpus) const { return performance_cores(describe_cpus(dir(), cpus)); }

 private:
  TempTree tree_;
};

std::vector<int> first(int n) {
  std::vector<int> cpus;
  for (int i = 0; i < n; ++i) cpus.push_back(i);
  return cpus;
}

// Each field from its own file; a missing file leaves the field unknown.
TEST(CpuTopology, ReadsEachCpusFiles) {
  FakeSysfs sys;
  sys.core(3, 1, 7);
  sys.set(3, "cpu_capacity", 512);
  sys.set(3, "cpufreq/cpuinfo_max_freq", 2400000);
  sys.set(5, "cpu_capacity", 1024);
  const auto d = describe_cpus(sys.dir(), {3, 5});
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].cpu, 3);
  EXPECT_EQ(d[0].package, 1);
  EXPECT_EQ(d[0].core, 7);
  EXPECT_EQ(d[0].capacity, 512);
  EXPECT_EQ(d[0].max_khz, 2400000);
  EXPECT_EQ(d[1].cpu, 5);
  EXPECT_EQ(d[1].package, 0);
  EXPECT_EQ(d[1].core, -1);
  EXPECT_EQ(d[1].capacity, 1024);
  EXPECT_EQ(d[1].max_khz, 0);
}

// Without sysfs every usable CPU counts as a core.
TEST(CpuTopology, WithoutSysfsEveryCpuIsACore) {
  EXPECT_EQ(performance_cores(describe_cpus("/nonexistent/cpu", first(6))), 6);
  EXPECT_EQ(performance_cores({}), 1);
}

// Two hardware threads of a core count once; cores of two packages that
// share a core_id count twice.
TEST(CpuTopology, SmtSiblingsCountOnce) {
  FakeSysfs sys;
  for (int cpu = 0; cpu < 8; ++cpu) sys.core(cpu, 0, cpu % 4);  // cpu n and n + 4 are siblings
  EXPECT_EQ(sys.threads(first(8)), 4);
  EXPECT_EQ(sys.threads({0, 4}), 1) << "a process allowed on one core's two threads";
  FakeSysfs two;
  for (int cpu = 0; cpu < 8; ++cpu) two.core(cpu, cpu / 4, cpu % 4);
  EXPECT_EQ(two.threads(first(8)), 8);
}

// A phone's 1 + 3 + 4 cores by capacity: the 4 little ones are left out;
// the middle class, within 0.8 of the prime core or not, stays.
TEST(CpuTopology, LittleCoresAreLeftOut) {
  FakeSysfs sys;
  const long capacity[] = {1024, 870, 870, 870, 380, 380, 380, 380};
  for (int cpu = 0; cpu < 8; ++cpu) {
    sys.core(cpu, 0, cpu);
    sys.set(cpu, "cpu_capacity", capacity[cpu]);
  }
  EXPECT_EQ(sys.threads(first(8)), 4);
  EXPECT_EQ(sys.threads({4, 5, 6, 7}), 4) << "a process pinned to the little cores uses them all";
  FakeSysfs three;  // 1 + 4 + 3, the middle class at 0.75 of the prime core
  const long tri[] = {1024, 770, 770, 770, 770, 260, 260, 260};
  for (int cpu = 0; cpu < 8; ++cpu) {
    three.core(cpu, 0, cpu);
    three.set(cpu, "cpu_capacity", tri[cpu]);
  }
  EXPECT_EQ(three.threads(first(8)), 5);
}

// A hybrid x86 CPU without capacities: its efficiency cores by their lower
// maximum frequency, the performance cores' two threads counted once. Boost
// limits that differ by a few percent between cores of one class (AMD's
// preferred cores) leave every core in.
TEST(CpuTopology, EfficiencyCoresByFrequencyAndBoostSpreadKept) {
  FakeSysfs sys;
  for (int cpu = 0; cpu < 12; ++cpu) {  // 4 P-cores with two threads (cpus 0-7), 4 E-cores (8-11)
    sys.core(cpu, 0, cpu < 8 ? cpu / 2 : cpu);
    sys.set(cpu, "cpufreq/cpuinfo_max_freq", cpu < 8 ? 4700000 : 3500000);
  }
  EXPECT_EQ(sys.threads(first(12)), 4);
  FakeSysfs amd;
  for (int cpu = 0; cpu < 8; ++cpu) {
    amd.core(cpu, 0, cpu);
    amd.set(cpu, "cpufreq/cpuinfo_max_freq", 5700000 - 50000 * cpu);
  }
  EXPECT_EQ(amd.threads(first(8)), 8);
}

// Capacities rule over frequencies, and a speed some CPUs lack is not used.
TEST(CpuTopology, SpeedComesFromWhatEveryCpuHas) {
  FakeSysfs sys;
  for (int cpu = 0; cpu < 4; ++cpu) {
    sys.core(cpu, 0, cpu);
    sys.set(cpu, "cpu_capacity", 1024);
    sys.set(cpu, "cpufreq/cpuinfo_max_freq", cpu < 2 ? 3000000 : 1000000);
  }
  EXPECT_EQ(sys.threads(first(4)), 4) << "equal capacities: the frequencies are not consulted";
  FakeSysfs partial;
  for (int cpu = 0; cpu < 4; ++cpu) partial.core(cpu, 0, cpu);
  partial.set(0, "cpu_capacity", 1024);
  partial.set(1, "cpu_capacity", 200);
  EXPECT_EQ(partial.threads(first(4)), 4) << "two CPUs without a capacity: none is left out";
}

// A made-up /sys/fs/cgroup.
class FakeCgroups {
 public:
  void write(const std::string& path, const std::string& text) { tree_.write(path, text); }
  int limit(const std::string& proc_self_cgroup) const { return cgroup_cpu_limit(proc_self_cgroup, tree_.root()); }

 private:
  TempTree tree_;
};

// cgroup v2's cpu.max in the process's cgroup or above it: the smallest
// quota, in CPUs rounded up; "max" is none.
TEST(CpuTopology, CgroupV2QuotaLimitsTheThreads) {
  FakeCgroups cg;
  EXPECT_EQ(cg.limit("0::/app/worker\n"), 0) << "no files: no quota";
  cg.write("app/worker/cpu.max", "max 100000");
  EXPECT_EQ(cg.limit("0::/app/worker\n"), 0);
  cg.write("app/cpu.max", "250000 100000");  // docker --cpus=2.5 on the parent
  EXPECT_EQ(cg.limit("0::/app/worker\n"), 3);
  cg.write("app/worker/cpu.max", "100000 100000");
  EXPECT_EQ(cg.limit("0::/app/worker\n"), 1);
  FakeCgroups own;  // inside a container: the host's path is not in its tree, its root's files are
  own.write("cpu.max", "200000 100000");
  EXPECT_EQ(own.limit("0::/system.slice/docker-1234.scope\n"), 2);
}

// cgroup v1: cpu.cfs_quota_us / cpu.cfs_period_us in the cpu controller's
// tree (-1: none); other controllers' lines are not read.
TEST(CpuTopology, CgroupV1QuotaLimitsTheThreads) {
  FakeCgroups cg;
  cg.write("cpu/docker/abc/cpu.cfs_quota_us", "-1");
  cg.write("cpu/docker/abc/cpu.cfs_period_us", "100000");
  const std::string self = "4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n1:name=systemd:/\n";
  EXPECT_EQ(cg.limit(self), 0);
  cg.write("cpu/docker/abc/cpu.cfs_quota_us", "400000");
  EXPECT_EQ(cg.limit(self), 4);
  cg.write("memory/docker/abc/cpu.cfs_quota_us", "100000");  // not the cpu controller's tree
  cg.write("memory/docker/abc/cpu.cfs_period_us", "100000");
  EXPECT_EQ(cg.limit(self), 4);
  EXPECT_EQ(cg.limit("garbage\n::\n"), 0);
}

// The usable CPUs are the calling thread's affinity mask, as `taskset` or a
// container's CPU set leaves it: a thread pinned to one CPU sees just it.
TEST(CpuTopology, UsableCpusFollowTheAffinityMask) {
#if defined(__linux__)
  const std::vector<int> all = usable_cpu_list();
  ASSERT_FALSE(all.empty());
  std::vector<int> seen;
  bool pinned = false;
  std::thread pinned_thread([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(all.back(), &one);
    pinned = pthread_setaffinity_np(pthread_self(), sizeof(one), &one) == 0;
    if (pinned) seen = usable_cpu_list();
  });
  pinned_thread.join();
  if (!pinned) GTEST_SKIP() << "this system refused to pin a thread to CPU " << all.back();
  EXPECT_EQ(seen, std::vector<int>{all.back()});
  EXPECT_EQ(usable_cpu_list(), all) << "the test's own thread keeps its mask";
#else
  GTEST_SKIP() << "affinity masks are read on Linux only";
#endif
}

// This machine: at least one thread, no more than the CPUs it may run on.
TEST(CpuTopology, ThisMachinesDefaultFitsItsUsableCpus) {
  EXPECT_GE(usable_cpus(), 1);
  EXPECT_GE(default_threads(), 1);
  EXPECT_LE(default_threads(), usable_cpus());
}

}  // namespace
}  // namespace llmpack
