// Built-in chat templates, written for llmpack in the Jinja subset the
// interpreter runs. Each renders its family's prompt format; tests compare
// them with the published templates in ../shared/fixtures/chat-templates.
// Every tag strips the whitespace before it (`{%-`, `{{-`), so the layout
// below never reaches the output.
#include <array>
#include <utility>

#include "chat/template/chat_template.h"

namespace llmpack {
namespace {

// Llama 3 / 3.1 / 3.2 instruct: header blocks, content trimmed, <|eot_id|>.
constexpr const char* kLlama3 = R"TPL(
{{- bos_token }}
{%- for message in messages %}
  {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' }}
{%- endfor %}
{%- if add_generation_prompt %}
  {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %})TPL";

// ChatML (Qwen, Yi, many fine-tunes) without a default system prompt.
constexpr const char* kChatml = R"TPL(
{%- for message in messages %}
  {{- '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
  {{- '<|im_start|>assistant\n' }}
{%- endif %})TPL";

// Llama 2 chat: the system prompt goes inside the first [INST] in <<SYS>>.
constexpr const char* kLlama2 = R"TPL(
{%- if messages and messages[0]['role'] == 'system' %}
  {%- set system = messages[0]['content'] %}
  {%- set turns = messages[1:] %}
{%- else %}
  {%- set system = none %}
  {%- set turns = messages %}
{%- endif %}
{%- for message in turns %}
  {%- set content = message['content'] %}
  {%- if loop.first and system is not none %}
    {%- set content = '<<SYS>>\n' + system + '\n<</SYS>>\n\n' + content %}
  {%- endif %}
  {%- if message['role'] == 'user' %}
    {{- bos_token + '[INST] ' + content.strip() + ' [/INST]' }}
  {%- elif message['role'] == 'assistant' %}
    {{- ' ' + content.strip() + ' ' + eos_token }}
  {%- endif %}
{%- endfor %})TPL";

// Gemma / Gemma 2: no system role, so a system prompt is prepended to the
// first user turn (Google's template raises an error instead).
constexpr const char* kGemma = R"TPL(
{{- bos_token }}
{%- if messages and messages[0]['role'] == 'system' %}
  {%- set system = messages[0]['content'] | trim + '\n\n' %}
  {%- set turns = messages[1:] %}
{%- else %}
  {%- set system = '' %}
  {%- set turns = messages %}
{%- endif %}
{%- for message in turns %}
  {%- set role = 'model' if message['role'] == 'assistant' else message['role'] %}
  {%- set prefix = system if loop.first else '' %}
  {{- '<start_of_turn>' + role + '\n' + prefix + message['content'] | trim + '<end_of_turn>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
  {{- '<start_of_turn>model\n' }}
{%- endif %})TPL";

// Phi-3 / Phi-3.5: <|role|>\n ... <|end|>\n; EOS closes a finished chat.
constexpr const char* kPhi3 = R"TPL(
{%- for message in messages %}
  {%- if message['role'] == 'system' and message['content'] %}
    {{- '<|system|>\n' + message['content'] + '<|end|>\n' }}
  {%- elif message['role'] == 'user' %}
    {{- '<|user|>\n' + message['content'] + '<|end|>\n' }}
  {%- elif message['role'] == 'assistant' %}
    {{- '<|assistant|>\n' + message['content'] + '<|end|>\n' }}
  {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
  {{- '<|assistant|>\n' }}
{%- else %}
  {{- eos_token }}
{%- endif %})TPL";

// Mistral (v3 tekken / Nemo layout): [INST]...[/INST] with no spaces; the
// system prompt joins the last user turn, as Mistral's own template does.
constexpr const char* kMistral = R"TPL(
{%- if messages and messages[0]['role'] == 'system' %}
  {%- set system = messages[0]['content'] %}
  {%- set turns = messages[1:] %}
{%- else %}
  {%- set turns = messages %}
{%- endif %}
{{- bos_token }}
{%- for message in turns %}
  {%- if message['role'] == 'user' %}
    {%- if loop.last and system is defined %}
      {{- '[INST]' + system + '\n\n' + message['content'] + '[/INST]' }}
    {%- else %}
      {{- '[INST]' + message['content'] + '[/INST]' }}
    {%- endif %}
  {%- elif message['role'] == 'assistant' %}
    {{- message['content'] + eos_token }}
  {%- endif %}
{%- endfor %})TPL";

// SmolLM2 instruct: ChatML with SmolLM's default system prompt.
constexpr const char* kSmollm2 = R"TPL(
{%- for message in messages %}
  {%- if loop.first and messages[0]['role'] != 'system' %}
    {{- '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}
  {%- endif %}
  {{- '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
  {{- '<|im_start|>assistant\n' }}
{%- endif %})TPL";

constexpr std::array<std::pair<const char*, const char*>, 7> kBuiltins = {{
    {"llama3", kLlama3},
    {"chatml", kChatml},
    {"llama2", kLlama2},
    {"gemma", kGemma},
    {"phi3", kPhi3},
    {"mistral", kMistral},
    {"smollm2", kSmollm2},
}};

bool has(std::string_view source, std::string_view marker) { return source.find(marker) != std::string_view::npos; }

}  // namespace

Result<std::string> builtin_chat_template(std::string_view name) {
  for (const auto& [n, source] : kBuiltins) {
    if (name == n) return std::string(source);
  }
  std::string known;
  for (const auto& [n, source] : kBuiltins) known += (known.empty() ? "" : ", ") + std::string(n);
  return error_status("unknown chat template '" + std::string(name) + "': expected one of " + known);
}

std::vector<std::string> builtin_chat_template_names() {
  std::vector<std::string> names;
  for (const auto& [n, source] : kBuiltins) names.emplace_back(n);
  return names;
}

std::string detect_chat_template_name(std::string_view source) {
  if (has(source, "<|start_header_id|>")) return "llama3";
  if (has(source, "<start_of_turn>")) return "gemma";
  if (has(source, "<|im_start|>")) return has(source, "SmolLM") ? "smollm2" : "chatml";
  if (has(source, "<|user|>") && has(source, "<|end|>")) return "phi3";
  if (has(source, "[INST]")) return has(source, "<<SYS>>") ? "llama2" : "mistral";
  return "";
}

}  // namespace llmpack
