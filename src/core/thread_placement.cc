#include "core/thread_placement.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <thread>

#if defined(__linux__)
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace llmpack {

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

#if defined(__linux__)
constexpr int kMaxCpu = CPU_SETSIZE;  // what cpu_set_t holds
#else
constexpr int kMaxCpu = 1024;
#endif

}  // namespace

Result<std::vector<int>> parse_cpu_mask(std::string_view text) {
  std::string_view digits = text;
  if (digits.size() >= 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) digits.remove_prefix(2);
  if (digits.empty())
    return error_status("a CPU mask is hexadecimal digits (0x5: CPUs 0 and 2), got '" + std::string(text) + "'");
  std::vector<int> cpus;
  // The last digit holds CPUs 0-3, the one before it 4-7, and so on.
  for (size_t i = 0; i < digits.size(); ++i) {
    const int value = hex_digit(digits[digits.size() - 1 - i]);
    if (value < 0)
      return error_status("a CPU mask is hexadecimal digits (0x5: CPUs 0 and 2), got '" + std::string(text) +
                          "' ('" + std::string(1, digits[digits.size() - 1 - i]) + "' is not one)");
    for (int bit = 0; bit < 4; ++bit) {
      if (!(value >> bit & 1)) continue;
      const int cpu = static_cast<int>(4 * i) + bit;
      if (cpu >= kMaxCpu)
        return error_status("CPU mask '" + std::string(text) + "' names CPU " + std::to_string(cpu) +
                            "; CPUs are numbered below " + std::to_string(kMaxCpu));
      cpus.push_back(cpu);
    }
  }
  return cpus;
}

std::string cpu_mask_text(const std::vector<int>& cpus) {
  int top = -1;
  for (int cpu : cpus) top = std::max(top, cpu);
  if (top < 0) return "0x0";
  std::string digits(static_cast<size_t>(top / 4 + 1), '0');
  for (int cpu : cpus) {
    char& d = digits[digits.size() - 1 - static_cast<size_t>(cpu / 4)];
    const int value = hex_digit(d) | 1 << (cpu % 4);
    d = "0123456789abcdef"[value];
  }
  return "0x" + digits;
}

std::string cpu_list_text(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out.empty() ? "none" : out;
}

std::vector<int> ThreadPlacement::cpus_of_thread(int i) const {
  if (!groups.empty()) return groups[static_cast<size_t>(i) % groups.size()];
  if (strict && !cpus.empty()) return {cpus[static_cast<size_t>(i) % cpus.size()]};
  return cpus;
}

std::vector<int> ThreadPlacement::all_cpus() const {
  std::vector<int> all = cpus;
  for (const auto& g : groups) all.insert(all.end(), g.begin(), g.end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

Result<std::vector<int>> parse_cpu_list(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  const std::string whole(text);
  const auto bad = [&whole](const std::string& why) {
    return error_status("a CPU list is numbers and ranges like 0-3,6, got '" + whole + "' (" + why + ")");
  };
  const auto number = [](std::string_view digits, int* out) {
    if (digits.empty() || digits.size() > 9) return false;
    int v = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return false;
      v = v * 10 + (c - '0');
    }
    *out = v;
    return true;
  };
  std::vector<int> cpus;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    const size_t dash = item.find('-');
    int lo = 0, hi = 0;
    if (!number(item.substr(0, dash), &lo) || !number(dash == item.npos ? item : item.substr(dash + 1), &hi))
      return bad("'" + std::string(item) + "' is not a number or a range");
    if (hi < lo) return bad("range " + std::string(item) + " ends before it starts");
    if (hi >= kMaxCpu) return bad("CPUs are numbered below " + std::to_string(kMaxCpu));
    for (int cpu = lo; cpu <= hi; ++cpu) cpus.push_back(cpu);
    if (comma == text.npos) break;
    text.remove_prefix(comma + 1);
    if (text.empty()) return bad("it ends with a comma");
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

Status check_cpus_within(const std::vector<int>& cpus, const std::vector<int>& allowed) {
  std::vector<int> outside;
  for (int cpu : cpus)
    if (std::find(allowed.begin(), allowed.end(), cpu) == allowed.end()) outside.push_back(cpu);
  if (outside.empty()) return ok_status();
  const bool one = outside.size() == 1;
  return error_status(std::string(one ? "CPU " : "CPUs ") + cpu_list_text(outside) + (one ? " is" : " are") +
                      " not among those this process may run on (" + cpu_list_text(allowed) + ")");
}

#if defined(__linux__)

int this_thread_id() { return static_cast<int>(syscall(SYS_gettid)); }

std::vector<int> thread_cpus(int tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(tid, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  return cpus;
}

Status set_thread_cpus(int tid, const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) {
    if (cpu < 0 || cpu >= CPU_SETSIZE) return error_status("CPU " + std::to_string(cpu) + " is out of range");
    CPU_SET(cpu, &set);
  }
  if (sched_setaffinity(tid, sizeof(set), &set) == 0) return ok_status();
  return error_status("placing thread " + std::to_string(tid) + " on CPUs " + cpu_list_text(cpus) + ": " +
                      std::strerror(errno));
}

Status set_this_thread_priority(int level) {
  static const int kNice[] = {5, 0, -5, -10};  // levels -1, 0, 1, 2
  if (level < -1 || level > 2)
    return error_status("a thread priority level is -1 (low), 0 (normal), 1 (medium) or 2 (high), got " +
                        std::to_string(level));
  if (level == 0) return ok_status();
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(this_thread_id()), kNice[level + 1]) == 0) return ok_status();
  const int err = errno;
  return error_status("setting priority level " + std::to_string(level) + " (nice " +
                      std::to_string(kNice[level + 1]) + "): " + std::strerror(err) +
                      (err == EACCES || err == EPERM ? " (raising a priority needs CAP_SYS_NICE or a higher "
                                                       "RLIMIT_NICE)"
                                                     : ""));
}

#else

// Not a kernel id, but never 0 (the pool waits for its workers' ids).
int this_thread_id() { return static_cast<int>(std::hash<std::thread::id>()(std::this_thread::get_id()) | 1); }

std::vector<int> thread_cpus(int) {
  std::vector<int> cpus(std::max(1u, std::thread::hardware_concurrency()));
  for (size_t i = 0; i < cpus.size(); ++i) cpus[i] = static_cast<int>(i);
  return cpus;
}

Status set_thread_cpus(int, const std::vector<int>&) {
  return error_status("placing threads on CPUs needs Linux's sched_setaffinity");
}

Status set_this_thread_priority(int level) {
  if (level == 0) return ok_status();
  return error_status("thread priorities need Linux's setpriority");
}

#endif

}  // namespace llmpack
