// The llmpack command line: `llmpack <subcommand> [options]`.
#include <cstdio>

#include "cli_common.h"
#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"llmpack: run language models from self-describing packages on the CPU", "llmpack"};
  app.set_version_flag("--version", std::string("llmpack ") + LLMPACK_VERSION);
  app.require_subcommand(1);
  std::function<int()> action;
  llmpack::cli::register_run(app, action);
  llmpack::cli::register_chat(app, action);
  llmpack::cli::register_perplexity(app, action);
  llmpack::cli::register_chat_template(app, action);
  llmpack::cli::register_export(app, action);
  llmpack::cli::register_inspect(app, action);
  llmpack::cli::register_tokenize(app, action);
  llmpack::cli::register_bench(app, action);
  try {
    app.parse(argc, argv);
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
