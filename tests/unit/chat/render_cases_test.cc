// The 120 render cases of ../shared/fixtures/chat-templates/render_cases.json
// (rendered by Python jinja2 with HF's settings) must match byte for byte.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "chat/template/chat_template.h"
#include "common/fixtures.h"

namespace llmpack {
namespace {

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ChatTemplateFixtures, AllRenderCasesMatchJinja2) {
  LLMPACK_REQUIRE_FIXTURE(cases_path, "chat-templates/render_cases.json");
  const nlohmann::json doc = nlohmann::json::parse(read_text_file(cases_path));
  const auto& cases = doc.at("cases");
  ASSERT_EQ(cases.size(), 120u);
  std::map<std::string, std::unique_ptr<ChatTemplate>> templates;
  int matched = 0;
  for (const auto& c : cases) {
    const std::string name = c.at("template").get<std::string>();
    SCOPED_TRACE(name + " / " + c.at("conversation").get<std::string>() +
                 (c.at("add_generation_prompt").get<bool>() ? " / gen" : " / no-gen"));
    if (!templates.count(name)) {
      auto parsed = ChatTemplate::parse(read_text_file(testing::fixture_path("chat-templates/" + name)));
      ASSERT_TRUE(parsed.ok()) << parsed.status().message();
      templates[name] = std::move(parsed).value();
    }
    auto out = templates[name]->render_json(c.at("messages"), c.at("add_generation_prompt").get<bool>(),
                                            c.at("bos_token").get<std::string>(),
                                            c.at("eos_token").get<std::string>(), c.at("extra_context"));
    if (!c.at("expected_error").is_null()) {
      ASSERT_FALSE(out.ok()) << "expected an error, rendered: " << out.value();
      EXPECT_NE(out.status().message().find(c.at("expected_error").get<std::string>()), std::string::npos)
          << out.status().message();
      if (out.status().message().find(c.at("expected_error").get<std::string>()) != std::string::npos) ++matched;
      continue;
    }
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_EQ(out.value(), c.at("expected").get<std::string>());
    if (out.value() == c.at("expected").get<std::string>()) ++matched;
  }
  EXPECT_EQ(matched, 120);
  std::printf("render_cases.json: %d / %zu cases match\n", matched, cases.size());
}

}  // namespace
}  // namespace llmpack
