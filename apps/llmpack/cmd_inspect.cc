// `llmpack inspect PKG [--json] [--tensors]`: the model, the contract and the findings (I1).
#include <cstdio>

#include "cli_common.h"
#include "commands.h"
#include "engine/package_inspection.h"

namespace llmpack::cli {
namespace {

struct InspectOptions {
  std::string path;
  std::string tokenizer_path;
  bool json = false;
  bool tensors = false;
  int64_t max_seq_len = 0;
  int64_t max_context_len = 4096;
};

int execute(const InspectOptions& o) {
  ContractDefaults defaults;
  defaults.max_seq_len = o.max_seq_len;
  defaults.max_context_len = o.max_context_len;
  auto report = inspect_package(o.path, o.tokenizer_path, defaults);
  if (!report.ok()) return fail(report.status());
  if (o.json) std::printf("%s\n", report_to_json(*report, o.tensors).dump(2).c_str());
  else std::printf("%s", report_to_text(*report, o.tensors).c_str());
  return 0;
}

}  // namespace

void register_inspect(CLI::App& app, std::function<int()>& action) {
  auto* cmd = app.add_subcommand("inspect", "Show a package's model, contract and findings");
  auto o = std::make_shared<InspectOptions>();
  cmd->add_option("package", o->path, "A .gguf package or a llama2.c .bin checkpoint")->required();
  cmd->add_option("--tokenizer_path", o->tokenizer_path, "Tokenizer for a llama2.c checkpoint");
  cmd->add_flag("--json", o->json, "Print the report as JSON");
  cmd->add_flag("--tensors", o->tensors, "List every tensor: name, type, shape, bytes, offset (JSON: tensors.list)");
  cmd->add_option("--max_seq_len", o->max_seq_len, "For plain GGUFs: S = B (default 512)");
  cmd->add_option("--max_context_len", o->max_context_len, "For plain GGUFs: cap on C (default 4096)");
  cmd->callback([&action, o] { action = [o] { return execute(*o); }; });
}

}  // namespace llmpack::cli
