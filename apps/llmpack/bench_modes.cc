#include "bench_modes.h"

#include "cli_common.h"
#include "core/cpu_topology.h"

namespace llmpack::cli {

std::vector<BenchMode> bench_modes(const BenchOptions& o) {
  const auto or_auto = [](const std::vector<std::string>& v) {
    return v.empty() ? std::vector<std::string>{"auto"} : v;
  };
  const auto or_value = [](const std::vector<int64_t>& v, int64_t value) {
    return v.empty() ? std::vector<int64_t>{value} : v;
  };
  const std::vector<std::vector<int>> masks = o.cpu_masks.empty() ? std::vector<std::vector<int>>{{}} : o.cpu_masks;
  std::vector<BenchMode> modes;
  for (const auto& fa : or_auto(o.flash_attn))
    for (const auto& lm : or_auto(o.load_modes))
      for (const auto& mask : masks)
        for (int64_t strict : or_value(o.cpu_strict, 0))
          for (int64_t poll : or_value(o.polls, 50))
            modes.push_back({fa == "auto" ? -1 : 1, lm,
                             o.numa ? o.numa_placement : ThreadPlacement{mask, strict != 0, {}}, o.numa,
                             static_cast<int>(poll)});
  return modes;
}

Status apply_mode(const BenchMode& mode, ThreadPool& pool) {
  pool.set_spin(spin_for_poll(mode.poll));
  return pool.place(mode.placement);
}

std::string placement_note(const BenchMode& mode, ThreadPool& pool) {
  return placement_flags_text(mode.numa, mode.placement) + ": " + thread_cpus_text(pool);
}

Status check_cpu_masks(const BenchOptions& o) {
  const std::vector<int> usable = usable_cpu_list();
  for (const auto& mask : o.cpu_masks)
    LLMPACK_RETURN_IF_ERROR(check_cpus_within(mask, usable).with_context("-C " + cpu_mask_text(mask)));
  return ok_status();
}

}  // namespace llmpack::cli
