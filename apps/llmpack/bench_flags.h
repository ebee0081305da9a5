// How `llmpack bench` declares its llama-bench flags with the command-line
// parser: numeric lists in llama-bench's syntax (bench_lists.h), and the
// flags whose every accepted value names what llmpack does anyway.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace llmpack::cli {

// A comma-separated list in llama-bench's syntax (bench_lists.h) into `values`;
// errors name the flag as `shown` (llama-bench's spelling).
CLI::Option* add_list_option(CLI::App& cmd, const std::string& names, const std::string& shown,
                             std::vector<int64_t>& values, int64_t min, const std::string& help,
                             int64_t max = int64_t{1} << 20);

// A flag whose values (the flag repeated, or a list where the option splits
// at commas) each go through `parse` (text -> Result<T>) into `values`;
// errors name the flag as `shown`.
template <typename T, typename Parse>
CLI::Option* add_parsed_option(CLI::App& cmd, const std::string& names, const std::string& shown,
                               std::vector<T>& values, Parse parse, const std::string& help) {
  auto read = [&values, shown, parse](const std::vector<std::string>& items) {
    values.clear();
    for (const auto& text : items) {
      auto parsed = parse(text);
      if (!parsed.ok()) throw CLI::ValidationError(shown, parsed.status().message());
      values.push_back(std::move(parsed).value());
    }
  };
  return cmd.add_option_function<std::vector<std::string>>(names, read, help);
}

// llama-bench's -fa, -mmp and -lm into `values`: each value must name what
// llmpack does anyway (its only attention path, its only way to load), else
// the flag is refused with `why` (llama-bench runs every value of a list, so
// one that llmpack cannot run refuses the whole list).
CLI::Option* add_fixed_choice_option(CLI::App& cmd, const std::string& name, const std::string& shown,
                                     std::vector<std::string>& values, std::vector<std::string> accepted,
                                     const std::string& why, const std::string& help);

}  // namespace llmpack::cli
