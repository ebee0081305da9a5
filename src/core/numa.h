// llama.cpp's --numa strategies as thread placements (thread_placement.h).
// Linux lists the NUMA nodes under /sys/devices/system/node: `online` ("0-1")
// and nodeN/cpulist ("0-15,32-47") for each. llmpack reads a model through
// one mapping and places no memory itself; a page of the mapping is put on
// the node of the thread that first reads it (the kernel's first touch),
// which is why spreading or keeping the threads matters on a machine of
// several nodes:
//  - distribute: thread i on the CPUs of node i mod n (the nodes with CPUs
//    this process may run on, in order), so the threads and the weights they
//    read spread over every node's memory;
//  - isolate: every thread on the CPUs of the node the calling thread runs
//    on now, so no thread reads across the interconnect;
//  - numactl: every thread on the CPUs this process was given (as `numactl
//    --cpunodebind` or taskset set them), the OS moving them among those.
// On a machine of one node (or where sysfs does not say) distribute and
// isolate put every thread on the node's CPUs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/thread_placement.h"

namespace llmpack {

enum class NumaStrategy { kDistribute, kIsolate, kNumactl };

// "distribute", "isolate" or "numactl"; llama.cpp's "mirror" (which it does
// not implement either) and anything else are errors that list the three.
Result<NumaStrategy> parse_numa_strategy(std::string_view text);
const char* numa_strategy_name(NumaStrategy strategy);

// Each online node's CPUs under `sysfs_node_dir` (/sys/devices/system/node,
// or a test's copy), in node order, nodes without CPUs left out; empty when
// the directory says nothing. An unreadable list is an error naming its file.
Result<std::vector<std::vector<int>>> numa_node_cpus(const std::string& sysfs_node_dir);

// The strategy as a placement over `nodes` (numa_node_cpus; empty: every
// usable CPU is one node), restricted to `usable` (the process's CPUs), with
// `current_cpu` the CPU the calling thread runs on (isolate's node). A node
// whose CPUs are all outside `usable` is left out; an error when no node is left.
Result<ThreadPlacement> numa_placement(NumaStrategy strategy, const std::vector<std::vector<int>>& nodes,
                                       const std::vector<int>& usable, int current_cpu);

// numa_placement on this machine: its sysfs nodes, this process's CPUs and
// the calling thread's current CPU.
Result<ThreadPlacement> this_machine_numa_placement(NumaStrategy strategy);

}  // namespace llmpack
