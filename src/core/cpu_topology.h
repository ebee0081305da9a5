// How many threads a command uses when none is asked for. Linux describes
// each logical CPU under /sys/devices/system/cpu/cpuN: topology/core_id and
// topology/physical_package_id (SMT siblings share both), cpu_capacity (the
// scheduler's relative speed: big.LITTLE ARM, hybrid x86) and
// cpufreq/cpuinfo_max_freq. The default is one thread per physical core
// among the CPUs this process may run on, leaving out the slowest class of
// cores when a CPU mixes classes:
//  - a second hardware thread on a core adds little to kernels bound by the
//    core's vector units or by memory, and makes every parallel call wait
//    for one more thread;
//  - the work of a call is split evenly, so a thread on a little core sets
//    the pace of the big ones (a phone's 1 + 3 + 4 or 2 + 6 cores: the 4 or
//    6 little ones are left out, as ExecuTorch's runner does).
// Where the files are missing (containers without sysfs, other systems)
// every usable CPU counts as a core. A cgroup CPU quota (a container's
// --cpus) caps the count.
#pragma once

#include <string>
#include <vector>

namespace llmpack {

// What sysfs says of one logical CPU; 0 or -1 where it says nothing.
struct CpuDescription {
  int cpu = 0;        // logical CPU number
  int package = 0;    // topology/physical_package_id
  int core = -1;      // topology/core_id; -1: unknown, a core of its own
  long capacity = 0;  // cpu_capacity (1024 for the fastest class)
  long max_khz = 0;   // cpufreq/cpuinfo_max_freq
};

// The logical CPUs this process may run on (its affinity mask; every online
// CPU where the mask cannot be read).
std::vector<int> usable_cpu_list();
// Their count, at least 1: what --cpu_threads is compared with.
int usable_cpus();

// Reads the description of each of `cpus` under `sysfs_cpu_dir`
// (/sys/devices/system/cpu, or a test's copy).
std::vector<CpuDescription> describe_cpus(const std::string& sysfs_cpu_dir, const std::vector<int>& cpus);

// The rule above over described CPUs: their speed is the capacity when every
// CPU has one, else the maximum frequency when every CPU has one. When the
// slowest is below 0.8 of the fastest, the CPUs within 10% of the slowest are
// left out (per-core boost limits of one class differ by a few percent);
// then one per distinct (package, core). At least 1.
int performance_cores(const std::vector<CpuDescription>& cpus);

// The CPU time a cgroup quota allows this process, in CPUs (quota over
// period, rounded up; 0: no quota), read as containers set it (docker
// --cpus, Kubernetes limits): cgroup v2's cpu.max, or v1's
// cpu.cfs_quota_us and cpu.cfs_period_us, in the process's cgroup (from
// `proc_self_cgroup`, /proc/self/cgroup's text) under `cgroup_root`
// (/sys/fs/cgroup) and each cgroup above it (the smallest counts); inside a
// container, whose /proc/self/cgroup may name the host's path, the root's
// own files are read too. A quota does not show in the affinity mask, so
// without this a container limited to 2 CPUs of a 64-core host would run 64
// threads, each on the CPU a thirty-second of the time.
int cgroup_cpu_limit(const std::string& proc_self_cgroup, const std::string& cgroup_root);

// cgroup_cpu_limit of this process (/proc/self/cgroup under /sys/fs/cgroup).
int this_process_cpu_quota();

// performance_cores of this machine's usable CPUs, capped by its cgroup's
// CPU quota: every command's default thread count (run, chat, perplexity,
// export, bench's -t, the Python bindings' cpu_threads = 0).
int default_threads();

}  // namespace llmpack
