// The llmpack command line: `llmpack <subcommand> [options]`.
#include <cstdio>
#include <string>
#include <vector>

#include "bench_lists.h"
#include "build_info.h"
#include "cli_common.h"
#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"llmpack: run language models from self-describing packages on the CPU", "llmpack"};
  app.set_version_flag("--version", std::string("llmpack ") + LLMPACK_VERSION + " (commit " + LLMPACK_BUILD_COMMIT + ")");
  app.require_subcommand(1);
  std::function<int()> action;
  llmpack::cli::register_run(app, action);
  llmpack::cli::register_chat(app, action);
  llmpack::cli::register_perplexity(app, action);
  llmpack::cli::register_imatrix(app, action);
  llmpack::cli::register_chat_template(app, action);
  llmpack::cli::register_export(app, action);
  llmpack::cli::register_inspect(app, action);
  llmpack::cli::register_tokenize(app, action);
  llmpack::cli::register_bench(app, action);
  // llama-bench's -pg, -ub, -ctk, -ctv and -ngl, which CLI11 reads only as long names.
  std::vector<std::string> args = llmpack::cli::with_bench_long_names({argv + 1, argv + argc});
  if (const std::string why = llmpack::cli::llama_bench_flag_not_taken(args); !why.empty()) {
    std::fprintf(stderr, "llmpack: %s\n", why.c_str());
    return 2;
  }
  std::vector<char*> arg_pointers{argv[0]};
  for (auto& arg : args) arg_pointers.push_back(arg.data());
  try {
    app.parse(static_cast<int>(arg_pointers.size()), arg_pointers.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "llmpack: %s (see llmpack --help)\n", e.what());
    return 2;
  }
  return action ? action() : 2;
}
