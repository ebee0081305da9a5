// libFuzzer target: arbitrary bytes as a chat template, parsed and rendered
// for a fixed conversation. Any input must give a value or a clean error:
// no crash, no sanitizer report, no hang (render limits are tightened so
// one input stays well under a second).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "chat/template/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16384) return 0;
  llmpack::ChatTemplateOptions options;
  options.max_steps = 20000;
  options.max_output_bytes = 1 << 16;
  auto parsed = llmpack::ChatTemplate::parse(std::string_view(reinterpret_cast<const char*>(data), size), options);
  if (!parsed.ok()) return 0;
  static const std::vector<llmpack::ChatMessage> kConversation = {
      {"system", "You are helpful."}, {"user", "Hi <b>&'\"</b>"}, {"assistant", " Hello! "}, {"user", "héllo\n"}};
  const nlohmann::json extra = {{"date_string", "26 Jul 2024"}, {"tools", {{{"name", "f"}, {"arguments", {1, 2.5, nullptr}}}}}};
  for (bool add_generation_prompt : {false, true}) {
    auto out = (*parsed)->render(kConversation, add_generation_prompt, "<s>", "</s>", extra);
    (void)out;
  }
  return 0;
}
