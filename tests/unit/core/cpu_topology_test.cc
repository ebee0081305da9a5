// The default thread count (core/cpu_topology.h): one per physical core of
// the usable CPUs, the slowest class of a mixed CPU left out, read from a
// sysfs tree that each test writes for the machine it describes.
#include "core/cpu_topology.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace llmpack {
namespace {

namespace fs = std::filesystem;

// A made-up /sys/devices/system/cpu, removed at the end of the test.
class FakeSysfs {
 public:
  FakeSysfs() {
    dir_ = fs::temp_directory_path() /
           ("llmpack_cpus_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  ~FakeSysfs() { fs::remove_all(dir_); }
  // Writes `value` to cpuN/<file>.
  void set(int cpu, const std::string& file, long value) {
    const fs::path path = dir_ / ("cpu" + std::to_string(cpu)) / file;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << value << "\n";
  }
  void core(int cpu, int package, int core) {
    set(cpu, "topology/physical_package_id", package);
    set(cpu, "topology/core_id", core);
  }
  std::string dir() const { return dir_.string(); }
  int threads(const std::vector<int>& cpus) const { return performance_cores(describe_cpus(dir(), cpus)); }

 private:
  fs::path dir_;
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

// This machine: at least one thread, no more than the CPUs it may run on.
TEST(CpuTopology, ThisMachinesDefaultFitsItsUsableCpus) {
  EXPECT_GE(usable_cpus(), 1);
  EXPECT_GE(default_threads(), 1);
  EXPECT_LE(default_threads(), usable_cpus());
}

}  // namespace
}  // namespace llmpack
