// Chat templates: a model's `tokenizer.chat_template` (Jinja2, from the GGUF
// or tokenizer_config.json) rendered for a conversation the way Hugging Face
// transformers' apply_chat_template does (jinja2 with trim_blocks,
// lstrip_blocks and loop controls), by an interpreter written for the
// subset chat templates use. Named built-ins cover models without a template
// and the `--chat_template NAME` option.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace llmpack {

namespace jinja {
struct Stmt;
struct Value;
}

struct ChatMessage {
  std::string role;     // "system", "user", "assistant", "tool"
  std::string content;
};

struct ChatTemplateOptions {
  // HF defines strftime_now(fmt) (local time); off by default so renders
  // are reproducible (Llama 3.2 then uses date_string or its default).
  bool enable_strftime_now = false;
  size_t max_output_bytes = 4u << 20;  // a larger render is an error
  size_t max_steps = 1'000'000;        // statements + loop iterations
};

class ChatTemplate {
 public:
  // Parses a template. Syntax errors and unsupported features (include,
  // import, call, unknown filters, ...) fail here with the template line:
  // "chat template line 3: unsupported tag 'include'; use --chat_template NAME".
  static Result<std::unique_ptr<ChatTemplate>> parse(std::string_view source, ChatTemplateOptions options = {});
  ~ChatTemplate();
  ChatTemplate(const ChatTemplate&) = delete;
  ChatTemplate& operator=(const ChatTemplate&) = delete;

  // Renders with the variables HF passes: messages, add_generation_prompt,
  // bos_token, eos_token, plus each key of `extra_context` (an object, e.g.
  // {"date_string": "26 Jul 2024", "tools": [...], "enable_thinking": false}).
  // A template's raise_exception("...") fails with that message.
  Result<std::string> render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                             const std::string& bos_token, const std::string& eos_token,
                             const nlohmann::json& extra_context = {}) const;
  // The same with messages as JSON (an array of objects; content may be
  // null, tool_calls and other fields are passed through).
  Result<std::string> render_json(const nlohmann::json& messages, bool add_generation_prompt,
                                  const std::string& bos_token, const std::string& eos_token,
                                  const nlohmann::json& extra_context = {}) const;
  // Objects keep their key order here (tojson output follows it).
  Result<std::string> render_json(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                  const std::string& bos_token, const std::string& eos_token,
                                  const nlohmann::ordered_json& extra_context = {}) const;

  const std::string& source() const { return source_; }

 private:
  ChatTemplate() = default;
  template <typename Json>
  Result<std::string> render_impl(const Json& messages, bool add_generation_prompt, const std::string& bos_token,
                                  const std::string& eos_token, const Json& extra_context) const;
  std::string source_;
  ChatTemplateOptions options_;
  std::vector<std::unique_ptr<jinja::Stmt>> body_;
};

// Built-in templates by name: llama3, chatml, llama2, gemma, phi3, mistral,
// smollm2. Unknown names fail with the list of known ones.
Result<std::string> builtin_chat_template(std::string_view name);
std::vector<std::string> builtin_chat_template_names();
// Guesses the family of a template from its special markers
// ("<|start_header_id|>" -> "llama3", "<|im_start|>" -> "chatml", ...);
// empty when nothing matches.
std::string detect_chat_template_name(std::string_view source);

}  // namespace llmpack
