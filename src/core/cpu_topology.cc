#include "core/cpu_topology.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "core/thread_placement.h"

namespace llmpack {

namespace {

constexpr double kSlowClassBelow = 0.8;  // the slowest class counts as slow below this share of the fastest
constexpr double kClassWidth = 1.1;      // CPUs within 10% of the slowest belong to its class

// The first integer of a sysfs file, or `fallback` when it is missing or empty.
long read_number(const std::string& path, long fallback) {
  std::ifstream in(path);
  long value = 0;
  return in >> value ? value : fallback;
}

std::vector<int> every_online_cpu() {
  std::vector<int> cpus(std::max(1u, std::thread::hardware_concurrency()));
  for (size_t i = 0; i < cpus.size(); ++i) cpus[i] = static_cast<int>(i);
  return cpus;
}

// Each CPU's speed for the class rule (capacity, else max frequency, else
// all equal), as the header says.
std::vector<double> speeds(const std::vector<CpuDescription>& cpus) {
  const bool capacities = std::all_of(cpus.begin(), cpus.end(), [](const auto& c) { return c.capacity > 0; });
  const bool frequencies = std::all_of(cpus.begin(), cpus.end(), [](const auto& c) { return c.max_khz > 0; });
  std::vector<double> s;
  for (const auto& c : cpus)
    s.push_back(capacities ? static_cast<double>(c.capacity) : frequencies ? static_cast<double>(c.max_khz) : 1.0);
  return s;
}

}  // namespace

std::vector<int> usable_cpu_list() {
  std::vector<int> cpus = thread_cpus(this_thread_id());
  return cpus.empty() ? every_online_cpu() : cpus;
}

int usable_cpus() { return static_cast<int>(usable_cpu_list().size()); }

std::vector<CpuDescription> describe_cpus(const std::string& sysfs_cpu_dir, const std::vector<int>& cpus) {
  std::vector<CpuDescription> out;
  for (int cpu : cpus) {
    const std::string dir = sysfs_cpu_dir + "/cpu" + std::to_string(cpu) + "/";
    CpuDescription d;
    d.cpu = cpu;
    d.package = static_cast<int>(read_number(dir + "topology/physical_package_id", 0));
    d.core = static_cast<int>(read_number(dir + "topology/core_id", -1));
    d.capacity = read_number(dir + "cpu_capacity", 0);
    d.max_khz = read_number(dir + "cpufreq/cpuinfo_max_freq", 0);
    out.push_back(d);
  }
  return out;
}

int performance_cores(const std::vector<CpuDescription>& cpus) {
  if (cpus.empty()) return 1;
  const std::vector<double> s = speeds(cpus);
  const double fastest = *std::max_element(s.begin(), s.end());
  const double slowest = *std::min_element(s.begin(), s.end());
  const bool mixed = slowest < kSlowClassBelow * fastest;
  std::set<std::pair<int, int>> cores;  // (package, core) of each kept CPU with a known core
  int unknown = 0;                      // kept CPUs whose core sysfs does not give
  for (size_t i = 0; i < cpus.size(); ++i) {
    if (mixed && s[i] <= kClassWidth * slowest) continue;
    if (cpus[i].core < 0)
      ++unknown;
    else
      cores.insert({cpus[i].package, cpus[i].core});
  }
  return std::max(1, static_cast<int>(cores.size()) + unknown);
}

namespace {

// The tighter of two limits in CPUs, where 0 is none.
int tighter_limit(int a, int b) { return a > 0 && b > 0 ? std::min(a, b) : std::max(a, b); }

// CPUs a quota of `quota` per `period` microseconds allows, rounded up; 0 for none.
int quota_cpus(long quota, long period) {
  if (quota <= 0 || period <= 0) return 0;
  return static_cast<int>((quota + period - 1) / period);
}

// The quota of the cgroup directory `dir`: v2's cpu.max ("max 100000" or
// "200000 100000") or v1's cpu.cfs_quota_us (-1: none) / cpu.cfs_period_us.
int dir_cpu_limit(const std::string& dir) {
  if (std::ifstream max(dir + "/cpu.max"); max) {
    std::string quota;
    long period = 0;
    if (!(max >> quota >> period) || quota == "max") return 0;
    return quota_cpus(std::atol(quota.c_str()), period);
  }
  return quota_cpus(read_number(dir + "/cpu.cfs_quota_us", 0), read_number(dir + "/cpu.cfs_period_us", 0));
}

// The smallest quota from `root` + `path` up to `root` itself.
int path_cpu_limit(const std::string& root, std::string path) {
  int limit = 0;
  for (;;) {
    limit = tighter_limit(limit, dir_cpu_limit(root + path));
    if (path.empty() || path == "/") return limit;
    const size_t slash = path.find_last_of('/');
    path = slash == std::string::npos ? "" : path.substr(0, slash);
  }
}

}  // namespace

int cgroup_cpu_limit(const std::string& proc_self_cgroup, const std::string& cgroup_root) {
  int limit = 0;
  std::istringstream lines(proc_self_cgroup);
  for (std::string line; std::getline(lines, line);) {
    // "0::/path" (v2) or "4:cpu,cpuacct:/path" (v1)
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = "," + line.substr(first + 1, second - first - 1) + ",";
    const std::string path = line.substr(second + 1);
    if (controllers == ",,")
      limit = tighter_limit(limit, path_cpu_limit(cgroup_root, path));
    else if (controllers.find(",cpu,") != std::string::npos)
      limit = tighter_limit(limit, path_cpu_limit(cgroup_root + "/cpu", path));
  }
  return limit;
}

int this_process_cpu_quota() {
  std::ifstream in("/proc/self/cgroup");
  const std::string cgroups((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return cgroup_cpu_limit(cgroups, "/sys/fs/cgroup");
}

int default_threads() {
  static const int threads = [] {
    const int cores = performance_cores(describe_cpus("/sys/devices/system/cpu", usable_cpu_list()));
    const int quota = this_process_cpu_quota();
    return quota > 0 ? std::min(cores, quota) : cores;
  }();
  return threads;
}

}  // namespace llmpack
