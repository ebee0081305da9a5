// Where a thread pool's threads run, as llama.cpp's -C / --cpu-mask and
// --cpu-strict place them: on the CPUs of a mask, each free to run on any of
// them, or (strict) thread i on the i-th CPU of the mask alone, round robin.
// By default nothing is placed and the OS moves threads as it likes. Pinning
// matters where the OS's choice is poor: a hybrid CPU whose little cores
// would set the pace of a parallel call, or a machine shared with other
// processes the benchmark should keep off its cores.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace llmpack {

struct ThreadPlacement {
  std::vector<int> cpus;  // logical CPU numbers, ascending; empty: the OS places the threads
  bool strict = false;    // thread i on cpus[i % cpus.size()] alone, else every thread on all of them
  // llama.cpp's --numa distribute: thread i on every CPU of groups[i % groups.size()]
  // (a group a NUMA node, numa.h); when not empty, cpus and strict are unused.
  std::vector<std::vector<int>> groups;

  bool empty() const { return cpus.empty() && groups.empty(); }
  // Thread i's CPUs; empty when nothing is placed.
  std::vector<int> cpus_of_thread(int i) const;
  // Every CPU some thread is placed on, ascending.
  std::vector<int> all_cpus() const;
};

// A CPU mask as llama.cpp's -C takes it: hexadecimal of any length, with or
// without 0x, bit i for CPU i ("0x5": CPUs 0 and 2). "0x0" is the empty mask.
// Errors say what was expected and what was found.
Result<std::vector<int>> parse_cpu_mask(std::string_view text);
// The mask's text as llama-bench records it: "0x5"; "0x0" for none.
std::string cpu_mask_text(const std::vector<int>& cpus);
// "0-3,6": a CPU list as the kernel writes one (for messages).
std::string cpu_list_text(const std::vector<int>& cpus);
// The kernel's list format read back ("0-3,6", as sysfs cpulist files hold;
// "" is no CPU): ascending and without repeats. Errors quote the text.
Result<std::vector<int>> parse_cpu_list(std::string_view text);

// ok when every CPU of `cpus` is among `allowed`; else an error naming the
// CPUs outside it and the allowed ones ("CPU 4 is not among those this
// process may run on (0-1)").
Status check_cpus_within(const std::vector<int>& cpus, const std::vector<int>& allowed);

// The calling thread's id as the kernel numbers threads (gettid).
int this_thread_id();
// The CPUs thread `tid` may run on, and setting them (Linux; elsewhere the
// first gives every CPU and the second an error).
std::vector<int> thread_cpus(int tid);
Status set_thread_cpus(int tid, const std::vector<int>& cpus);

// llama.cpp's --prio levels for the calling thread, as nice values (threads
// it creates afterwards inherit it): -1 low (nice 5), 0 normal (unchanged), 1
// medium (-5), 2 high (-10). Raising needs CAP_SYS_NICE or an RLIMIT_NICE
// that allows it; the error says so. Realtime (3) is refused by the caller:
// threads that spin waiting for work under SCHED_FIFO starve the rest.
Status set_this_thread_priority(int level);

}  // namespace llmpack
