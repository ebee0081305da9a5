// Each subcommand registers its options and, when chosen, the action to run.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace llmpack::cli {

void register_run(CLI::App& app, std::function<int()>& action);
void register_chat(CLI::App& app, std::function<int()>& action);
void register_perplexity(CLI::App& app, std::function<int()>& action);
void register_imatrix(CLI::App& app, std::function<int()>& action);
void register_chat_template(CLI::App& app, std::function<int()>& action);
void register_export(CLI::App& app, std::function<int()>& action);
void register_inspect(CLI::App& app, std::function<int()>& action);
void register_tokenize(CLI::App& app, std::function<int()>& action);
void register_bench(CLI::App& app, std::function<int()>& action);

}  // namespace llmpack::cli
