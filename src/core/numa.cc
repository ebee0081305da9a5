#include "core/numa.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/cpu_topology.h"

#if defined(__linux__)
#include <sched.h>
#endif

namespace llmpack {

namespace {

// Reads a whole file into *text; false when it cannot be opened.
bool read_text(const std::string& path, std::string* text) {
  std::ifstream in(path);
  if (!in) return false;
  std::ostringstream out;
  out << in.rdbuf();
  *text = out.str();
  return true;
}

std::vector<int> intersection(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out;
  for (int cpu : a)
    if (std::find(b.begin(), b.end(), cpu) != b.end()) out.push_back(cpu);
  return out;
}

int current_cpu() {
#if defined(__linux__)
  return sched_getcpu();
#else
  return -1;
#endif
}

}  // namespace

Result<NumaStrategy> parse_numa_strategy(std::string_view text) {
  if (text == "distribute") return NumaStrategy::kDistribute;
  if (text == "isolate") return NumaStrategy::kIsolate;
  if (text == "numactl") return NumaStrategy::kNumactl;
  const std::string why = text == "mirror" ? " (llama.cpp does not implement mirror either)" : "";
  return error_status("expected distribute, isolate or numactl, got '" + std::string(text) + "'" + why);
}

const char* numa_strategy_name(NumaStrategy strategy) {
  switch (strategy) {
    case NumaStrategy::kDistribute: return "distribute";
    case NumaStrategy::kIsolate: return "isolate";
    case NumaStrategy::kNumactl: return "numactl";
  }
  return "?";
}

Result<std::vector<std::vector<int>>> numa_node_cpus(const std::string& sysfs_node_dir) {
  std::string online_text;
  if (!read_text(sysfs_node_dir + "/online", &online_text)) return std::vector<std::vector<int>>{};
  auto online = parse_cpu_list(online_text);  // node numbers share the CPU list format
  if (!online.ok()) return online.status().with_context(sysfs_node_dir + "/online");
  std::vector<std::vector<int>> nodes;
  for (int node : *online) {
    const std::string path = sysfs_node_dir + "/node" + std::to_string(node) + "/cpulist";
    std::string text;
    if (!read_text(path, &text)) continue;  // a node listed but gone: no CPUs to place on
    auto cpus = parse_cpu_list(text);
    if (!cpus.ok()) return cpus.status().with_context(path);
    if (!cpus->empty()) nodes.push_back(std::move(*cpus));
  }
  return nodes;
}

Result<ThreadPlacement> numa_placement(NumaStrategy strategy, const std::vector<std::vector<int>>& nodes,
                                       const std::vector<int>& usable, int current_cpu) {
  ThreadPlacement placement;
  if (strategy == NumaStrategy::kNumactl) {
    placement.cpus = usable;
    return placement;
  }
  std::vector<std::vector<int>> kept;  // each node's usable CPUs
  for (const auto& node : nodes.empty() ? std::vector<std::vector<int>>{usable} : nodes)
    if (auto cpus = intersection(node, usable); !cpus.empty()) kept.push_back(std::move(cpus));
  if (kept.empty())
    return error_status(std::string(numa_strategy_name(strategy)) + ": no NUMA node has a CPU this process may " +
                        "run on (" + cpu_list_text(usable) + ")");
  if (strategy == NumaStrategy::kDistribute) {
    placement.groups = std::move(kept);
    return placement;
  }
  // isolate: the node of the current CPU; the first node where that is not a usable CPU's.
  placement.cpus = kept.front();
  for (const auto& node : kept)
    if (std::find(node.begin(), node.end(), current_cpu) != node.end()) placement.cpus = node;
  return placement;
}

Result<ThreadPlacement> this_machine_numa_placement(NumaStrategy strategy) {
  auto nodes = numa_node_cpus("/sys/devices/system/node");
  if (!nodes.ok()) return nodes.status();
  return numa_placement(strategy, *nodes, usable_cpu_list(), current_cpu());
}

}  // namespace llmpack
