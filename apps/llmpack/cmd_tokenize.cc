// `llmpack tokenize -m MODEL -p TEXT [--ids] [--no_bos] [--parse_special]
// [--tokenizer_path PATH]`: prints the token ids of TEXT like llama.cpp's
// llama-tokenize ("    id -> 'piece'" lines, or a Python-style list with
// --ids). MODEL is a GGUF (only its vocabulary is read) or any tokenizer file
// load_tokenizer knows (tokenizer.json(.gz), tiktoken, SentencePiece .model,
// llama2.c tokenizer.bin).
#include <cstdio>
#include <string>

#include "cli_common.h"
#include "commands.h"
#include "tokenizer/tokenizer_loader.h"

namespace llmpack::cli {
namespace {

struct TokenizeOptions {
  std::string model_path;
  std::string tokenizer_path;
  std::string prompt;
  bool ids = false;
  bool no_bos = false;
  bool parse_special = false;
};

// What a token shows as: special tokens by their name, others by their bytes.
std::string shown_piece(const Tokenizer& tok, int32_t id) {
  for (int32_t s : tok.special_token_ids()) {
    if (s == id) return tok.piece(id);
  }
  if (id == tok.bos_id() || id == tok.eos_id()) return tok.piece(id);
  auto text = tok.decode(-1, id);
  return text.ok() ? *text : tok.piece(id);
}

int execute(const TokenizeOptions& o) {
  const std::string& path = o.tokenizer_path.empty() ? o.model_path : o.tokenizer_path;
  auto tok = load_tokenizer(path);
  if (!tok.ok()) return fail(tok.status());
  EncodeOptions options;
  options.n_bos = o.no_bos ? 0 : (*tok)->default_num_bos();
  options.parse_special = o.parse_special;
  auto ids = (*tok)->encode(o.prompt, options);
  if (!ids.ok()) return fail(ids.status().with_context("tokenizing the prompt"));
  if (o.ids) {
    std::string line = "[";
    for (size_t i = 0; i < ids->size(); ++i) line += (i ? ", " : "") + std::to_string((*ids)[i]);
    std::printf("%s]\n", line.c_str());
    return 0;
  }
  for (int32_t id : *ids) std::printf("%6d -> '%s'\n", id, shown_piece(**tok, id).c_str());
  return 0;
}

}  // namespace

void register_tokenize(CLI::App& app, std::function<int()>& action) {
  auto* cmd = app.add_subcommand("tokenize", "Print the tokens of a text");
  auto o = std::make_shared<TokenizeOptions>();
  cmd->add_option("-m,--model", o->model_path, "A GGUF (its vocabulary) or a tokenizer file")->required();
  cmd->add_option("-p,--prompt", o->prompt, "The text to tokenize")->required();
  cmd->add_option("--tokenizer_path", o->tokenizer_path, "Tokenizer file to use instead of MODEL's");
  cmd->add_flag("--ids", o->ids, "Print only the ids, as a list [1, 2, 3]");
  cmd->add_flag("--no_bos", o->no_bos, "Do not add the BOS the model's rule asks for");
  cmd->add_flag("--parse_special", o->parse_special, "Turn special-token text like <|eot_id|> into its id");
  cmd->callback([&action, o] { action = [o] { return execute(*o); }; });
}

}  // namespace llmpack::cli
