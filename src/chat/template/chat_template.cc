#include "chat/template/chat_template.h"

#include "chat/template/evaluator.h"
#include "chat/template/parser.h"

namespace llmpack {
namespace {

std::string with_line(const std::string& message, int line) {
  if (line <= 0) return "chat template: " + message;
  return "chat template line " + std::to_string(line) + ": " + message;
}

}  // namespace

ChatTemplate::~ChatTemplate() = default;

Result<std::unique_ptr<ChatTemplate>> ChatTemplate::parse(std::string_view source, ChatTemplateOptions options) {
  std::unique_ptr<ChatTemplate> t(new ChatTemplate());
  t->source_ = std::string(source);
  t->options_ = options;
  try {
    t->body_ = jinja::parse_template(source);
  } catch (const jinja::TemplateError& e) {
    return error_status(with_line(e.what(), e.line()));
  }
  return t;
}

Result<std::string> ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                         const std::string& bos_token, const std::string& eos_token,
                                         const nlohmann::json& extra_context) const {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& m : messages) list.push_back({{"role", m.role}, {"content", m.content}});
  return render_impl(list, add_generation_prompt, bos_token, eos_token, nlohmann::ordered_json(extra_context));
}

Result<std::string> ChatTemplate::render_json(const nlohmann::json& messages, bool add_generation_prompt,
                                              const std::string& bos_token, const std::string& eos_token,
                                              const nlohmann::json& extra_context) const {
  return render_impl(messages, add_generation_prompt, bos_token, eos_token, extra_context);
}

Result<std::string> ChatTemplate::render_json(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                              const std::string& bos_token, const std::string& eos_token,
                                              const nlohmann::ordered_json& extra_context) const {
  return render_impl(messages, add_generation_prompt, bos_token, eos_token, extra_context);
}

template <typename Json>
Result<std::string> ChatTemplate::render_impl(const Json& messages, bool add_generation_prompt,
                                              const std::string& bos_token, const std::string& eos_token,
                                              const Json& extra_context) const {
  if (!messages.is_array()) {
    return error_status(std::string("chat template: messages must be a JSON array, found ") + messages.type_name());
  }
  if (!extra_context.is_null() && !extra_context.is_object()) {
    return error_status(std::string("chat template: extra context must be a JSON object, found ") +
                        extra_context.type_name());
  }
  jinja::RenderLimits limits;
  limits.max_output_bytes = options_.max_output_bytes;
  limits.max_steps = options_.max_steps;
  int line = 0;
  try {
    jinja::ValueDict context;
    if (extra_context.is_object()) {
      for (auto it = extra_context.begin(); it != extra_context.end(); ++it) {
        context.emplace_back(it.key(), jinja::value_from_json(it.value()));
      }
    }
    context.emplace_back("messages", jinja::value_from_json(messages));
    context.emplace_back("add_generation_prompt", jinja::Value::boolean(add_generation_prompt));
    context.emplace_back("bos_token", jinja::Value::string(bos_token));
    context.emplace_back("eos_token", jinja::Value::string(eos_token));
    jinja::Evaluator evaluator(std::move(context), limits, options_.enable_strftime_now);
    try {
      return evaluator.render(body_);
    } catch (const jinja::TemplateError&) {
      line = evaluator.line();
      throw;
    }
  } catch (const jinja::TemplateError& e) {
    return error_status(with_line(e.what(), e.line() > 0 ? e.line() : line));
  } catch (const std::bad_alloc&) {
    return error_status("chat template: out of memory while rendering");
  }
}

}  // namespace llmpack
