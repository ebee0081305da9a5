#include "bench_flags.h"

#include <algorithm>
#include <utility>

#include "bench_lists.h"

namespace llmpack::cli {

CLI::Option* add_list_option(CLI::App& cmd, const std::string& names, const std::string& shown,
                             std::vector<int64_t>& values, int64_t min, const std::string& help, int64_t max) {
  auto parse = [&values, flag = shown, min, max](const std::vector<std::string>& items) {
    std::string joined;
    for (const auto& item : items) joined.append(joined.empty() ? "" : ",").append(item);
    auto expanded = parse_bench_list(joined, min, max);
    if (!expanded.ok()) throw CLI::ValidationError(flag, expanded.status().message());
    values = std::move(*expanded);
  };
  return cmd.add_option_function<std::vector<std::string>>(names, parse, help)->delimiter(',')->type_name("LIST");
}

CLI::Option* add_fixed_choice_option(CLI::App& cmd, const std::string& name, const std::string& shown,
                                     std::vector<std::string>& values, std::vector<std::string> accepted,
                                     const std::string& why, const std::string& help) {
  auto check = [&values, flag = shown, accepted = std::move(accepted), why](const std::vector<std::string>& given) {
    for (const auto& v : given)
      if (std::find(accepted.begin(), accepted.end(), v) == accepted.end())
        throw CLI::ValidationError(flag, "'" + v + "': " + why);
    values = given;
  };
  return cmd.add_option_function<std::vector<std::string>>(name, check, help)->delimiter(',')->type_name("LIST");
}

}  // namespace llmpack::cli
