// Built-in templates: each renders a 3-message conversation in its family's
// format, and matches the published template of that family (fixtures) on
// every conversation of render_cases.json where the published one renders.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "chat/template/chat_template.h"
#include "common/fixtures.h"

namespace llmpack {
namespace {

const std::vector<ChatMessage> kConversation = {
    {"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello!"}};

std::string render_builtin(const std::string& name, bool add_generation_prompt, const std::string& bos,
                           const std::string& eos, const std::vector<ChatMessage>& messages = kConversation) {
  auto source = builtin_chat_template(name);
  EXPECT_TRUE(source.ok()) << source.status().message();
  auto t = ChatTemplate::parse(source.value());
  EXPECT_TRUE(t.ok()) << t.status().message();
  if (!t.ok()) return "";
  auto out = (*t)->render(messages, add_generation_prompt, bos, eos);
  EXPECT_TRUE(out.ok()) << out.status().message();
  return out.ok() ? out.value() : "";
}

TEST(BuiltinChatTemplates, Llama3) {
  EXPECT_EQ(render_builtin("llama3", true, "<|begin_of_text|>", "<|eot_id|>"),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(BuiltinChatTemplates, Chatml) {
  EXPECT_EQ(render_builtin("chatml", true, "", "<|im_end|>"),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>assistant\n");
}

TEST(BuiltinChatTemplates, Llama2) {
  EXPECT_EQ(render_builtin("llama2", true, "<s>", "</s>"),
            "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello! </s>");
}

TEST(BuiltinChatTemplates, GemmaFoldsSystemIntoFirstUserTurn) {
  EXPECT_EQ(render_builtin("gemma", true, "<bos>", "<eos>"),
            "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n"
            "<start_of_turn>model\nHello!<end_of_turn>\n<start_of_turn>model\n");
}

TEST(BuiltinChatTemplates, Phi3) {
  EXPECT_EQ(render_builtin("phi3", false, "<s>", "<|endoftext|>"),
            "<|system|>\nBe brief.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\nHello!<|end|>\n<|endoftext|>");
}

TEST(BuiltinChatTemplates, Mistral) {
  const std::vector<ChatMessage> conversation = {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello!"},
                                                 {"user", "Bye"}};
  EXPECT_EQ(render_builtin("mistral", true, "<s>", "</s>", conversation),
            "<s>[INST]Hi[/INST]Hello!</s>[INST]Be brief.\n\nBye[/INST]");
}

TEST(BuiltinChatTemplates, Smollm2) {
  EXPECT_EQ(render_builtin("smollm2", true, "", "<|im_end|>", {{"user", "Hi"}, {"assistant", "Yo"}, {"user", "Q"}}),
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nYo<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(BuiltinChatTemplates, NamesAndUnknownName) {
  const auto names = builtin_chat_template_names();
  EXPECT_EQ(names, (std::vector<std::string>{"llama3", "chatml", "llama2", "gemma", "phi3", "mistral", "smollm2"}));
  auto bad = builtin_chat_template("vicuna");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "unknown chat template 'vicuna': expected one of llama3, chatml, llama2, gemma, phi3, mistral, smollm2");
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Each built-in agrees with the published template of its family wherever
// the published one renders (Gemma's rejects a system message; Qwen's
// ChatML adds a default system prompt, so only conversations with one count).
TEST(BuiltinChatTemplates, MatchPublishedTemplatesOnFixtureConversations) {
  LLMPACK_REQUIRE_FIXTURE(cases_path, "chat-templates/render_cases.json");
  const std::vector<std::pair<std::string, std::string>> families = {
      {"meta-llama-Meta-Llama-3-8B-Instruct.jinja", "llama3"},
      {"Qwen-Qwen2.5-7B-Instruct.jinja", "chatml"},
      {"meta-llama-Llama-2-chat.jinja", "llama2"},
      {"google-gemma-2-2b-it.jinja", "gemma"},
      {"microsoft-Phi-3.5-mini-instruct.jinja", "phi3"},
      {"mistralai-Mistral-Nemo-Instruct-2407.jinja", "mistral"},
      {"HuggingFaceTB-SmolLM2-Instruct.jinja", "smollm2"},
  };
  const nlohmann::json doc = nlohmann::json::parse(read_file(cases_path));
  for (const auto& [file, name] : families) {
    auto t = ChatTemplate::parse(builtin_chat_template(name).value());
    ASSERT_TRUE(t.ok()) << t.status().message();
    int compared = 0;
    for (const auto& c : doc.at("cases")) {
      if (c.at("template") != file || c.at("expected").is_null()) continue;
      if (name == "chatml" && c.at("messages")[0].at("role") != "system") continue;
      SCOPED_TRACE(name + " / " + c.at("conversation").get<std::string>());
      auto out = (*t)->render_json(c.at("messages"), c.at("add_generation_prompt").get<bool>(),
                                   c.at("bos_token").get<std::string>(), c.at("eos_token").get<std::string>());
      ASSERT_TRUE(out.ok()) << out.status().message();
      EXPECT_EQ(out.value(), c.at("expected").get<std::string>());
      ++compared;
    }
    EXPECT_GE(compared, 4) << name;
    EXPECT_EQ(detect_chat_template_name(read_file(testing::fixture_path("chat-templates/" + file))), name) << file;
  }
}

TEST(BuiltinChatTemplates, DetectsFamilies) {
  for (const auto& name : builtin_chat_template_names()) {
    EXPECT_EQ(detect_chat_template_name(builtin_chat_template(name).value()), name);
  }
  EXPECT_EQ(detect_chat_template_name("{{ messages }}"), "");
}

}  // namespace
}  // namespace llmpack
