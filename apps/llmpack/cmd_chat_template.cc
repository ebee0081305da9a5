// `llmpack chat-template -m MODEL --messages FILE.json`: renders the model's
// chat template (or a built-in one) over a conversation and prints it.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "chat/template/chat_template.h"
#include "cli_common.h"
#include "commands.h"
#include "core/file_text.h"
#include "format/gguf.h"

namespace llmpack::cli {
namespace {

struct ChatTemplateCliOptions {
  std::string model_path;
  std::string messages_path;
  std::string template_name;
  bool no_generation_prompt = false;
};

// The text of special token `key` (e.g. tokenizer.ggml.bos_token_id) in the vocabulary.
std::string special_token_text(const GgufFile& gguf, const char* key) {
  const auto id = gguf.get_int(key);
  const auto* tokens = gguf.get_string_array("tokenizer.ggml.tokens");
  if (!id || !tokens || *id < 0 || *id >= static_cast<int64_t>(tokens->size())) return "";
  return std::string((*tokens)[*id]);
}

int execute(const ChatTemplateCliOptions& o) {
  auto gguf = GgufFile::open(o.model_path);
  if (!gguf.ok()) return fail(gguf.status());
  std::string source;
  if (!o.template_name.empty()) {
    auto chosen = chat_template_from_option(o.template_name);
    if (!chosen.ok()) return fail(chosen.status());
    source = *chosen;
  } else if (auto own = (*gguf)->get_string("tokenizer.chat_template")) {
    source = *own;
  } else {
    std::string names;
    for (const auto& n : builtin_chat_template_names()) names += (names.empty() ? "" : ", ") + n;
    return fail("the model has no tokenizer.chat_template; choose one with --chat_template NAME (" + names + ")");
  }
  auto messages_text = read_file_text(o.messages_path);
  if (!messages_text.ok()) return fail(messages_text.status().with_context("--messages"));
  nlohmann::ordered_json messages = nlohmann::ordered_json::parse(*messages_text, nullptr, /*allow_exceptions=*/false);
  // {"messages": [...], "tools": [...], "enable_thinking": false, ...}: the
  // other keys are the template's further variables, as HF passes them.
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  if (messages.is_object() && messages.contains("messages")) {
    extra = messages;
    messages = extra["messages"];
    extra.erase("messages");
  }
  if (!messages.is_array())
    return fail("--messages: expected a JSON list of {\"role\", \"content\"} objects (or {\"messages\": [...]} "
                "with further variables beside it)");
  auto tmpl = ChatTemplate::parse(source);
  if (!tmpl.ok()) return fail(tmpl.status());
  auto text = (*tmpl)->render_json(messages, !o.no_generation_prompt,
                                   special_token_text(**gguf, "tokenizer.ggml.bos_token_id"),
                                   special_token_text(**gguf, "tokenizer.ggml.eos_token_id"), extra);
  if (!text.ok()) return fail(text.status());
  std::fwrite(text->data(), 1, text->size(), stdout);
  return 0;
}

}  // namespace

void register_chat_template(CLI::App& app, std::function<int()>& action) {
  auto* cmd = app.add_subcommand("chat-template", "Render a model's chat template over a conversation");
  auto o = std::make_shared<ChatTemplateCliOptions>();
  cmd->add_option("-m,--model_path", o->model_path, "A .gguf package (its tokenizer.chat_template)")->required();
  cmd->add_option("--messages", o->messages_path,
                  "JSON file: [{\"role\": ..., \"content\": ...}, ...], "
                  "or {\"messages\": [...], \"tools\": [...], ...}")
      ->required();
  cmd->add_option("--chat_template", o->template_name,
                  "Use this template instead: a built-in name (llama3, chatml, llama2, gemma, phi3, mistral, smollm2) "
                  "or a .jinja file");
  cmd->add_flag("--no_generation_prompt", o->no_generation_prompt, "Do not open the assistant's turn");
  cmd->callback([&action, o] { action = [o] { return execute(*o); }; });
}

}  // namespace llmpack::cli
