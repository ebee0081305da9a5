// `llmpack perplexity` and `llmpack chat-template` as a user runs them.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/cli_runner.h"
#include "common/fixtures.h"
#include "common/tiny_model.h"

namespace {

using Outcome = llmpack::testing::CliOutcome;

Outcome run_tool(const std::string& args) { return llmpack::testing::run_llmpack(args); }

// Writes the greedy story of the golden file to a temp file named by `tag`
// and returns its path (the text perplexity scores).
std::string story_text_file(const std::string& golden, const std::string& tag) {
  std::ifstream in(golden);
  const std::string path = ::testing::TempDir() + "/" + tag + "_" + std::to_string(getpid()) + ".txt";
  std::ofstream(path) << nlohmann::json::parse(in)["generated_text"].get<std::string>();
  return path;
}

TEST(ToolsCli, PerplexityEndsWithTheFinalEstimateLine) {
  LLMPACK_REQUIRE_FIXTURE(model, "gguf/stories260K.gguf");
  LLMPACK_REQUIRE_FIXTURE(golden, "llama2c/stories260K_greedy_256.json");
  const std::string text_path = story_text_file(golden, "ppl");
  auto r = run_tool("perplexity -m " + model + " -f " + text_path + " -c 64 -t 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[1]"), std::string::npos) << "running estimate";
  const auto at = r.out.find("Final estimate: PPL = ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const double ppl = std::stod(r.out.substr(at + 22));
  EXPECT_GT(ppl, 1.0);
  EXPECT_LT(ppl, 4.0);
  EXPECT_NE(r.out.find(" +/- ", at), std::string::npos);
  auto missing = run_tool("perplexity -m " + model + " -f /no/such/file.txt");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("/no/such/file.txt"), std::string::npos);
  std::filesystem::remove(text_path);
}

// perplexity --chunks N (llama-perplexity's): N windows, with and without
// --kl_divergence; 0 is refused as a bad flag.
TEST(ToolsCli, PerplexityChunksScoresTheFirstWindows) {
  LLMPACK_REQUIRE_FIXTURE(model, "gguf/stories260K.gguf");
  LLMPACK_REQUIRE_FIXTURE(golden, "llama2c/stories260K_greedy_256.json");
  const std::string text_path = story_text_file(golden, "ppl_chunks");
  auto two = run_tool("perplexity -m " + model + " -f " + text_path + " -c 32 --chunks 2");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_NE(two.out.find("[2]"), std::string::npos) << two.out;
  EXPECT_EQ(two.out.find("[3]"), std::string::npos) << two.out;
  auto kld = run_tool("perplexity -m " + model + " -f " + text_path + " -c 32 --chunks 2 --kl_divergence " + model);
  ASSERT_EQ(kld.exit_code, 0) << kld.err;
  EXPECT_NE(kld.out.find("KL divergence statistics (30 positions)"), std::string::npos) << kld.out;
  auto zero = run_tool("perplexity -m " + model + " -f " + text_path + " -c 32 --chunks 0");
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_NE(zero.err.find("--chunks"), std::string::npos) << zero.err;
  std::filesystem::remove(text_path);
}

// perplexity --kl_divergence BASE: the statistics blocks, zero against the
// model itself; a base with another vocabulary is refused naming the counts.
TEST(ToolsCli, PerplexityAgainstABaseModelReportsKlDivergence) {
  LLMPACK_REQUIRE_FIXTURE(model, "gguf/stories260K.gguf");
  LLMPACK_REQUIRE_FIXTURE(golden, "llama2c/stories260K_greedy_256.json");
  const std::string text_path = story_text_file(golden, "kld");
  auto self = run_tool("perplexity -m " + model + " -f " + text_path + " -c 64 -t 2 --kl_divergence " + model);
  ASSERT_EQ(self.exit_code, 0) << self.err;
  for (const char* line : {"Mean PPL(model)  :", "Mean PPL(base)   :", "PPL ratio        :   1.000000",
                           "Mean    KLD:   0.000000 +/-   0.000000", "Maximum KLD:", "99.0%   KLD:", "Median  KLD:",
                           "RMS     dp:", "Same top p: 100.0000 +/- 0.0000 %"})
    EXPECT_NE(self.out.find(line), std::string::npos) << line << "\nin:\n" << self.out;
  llmpack::testing::TinyModelSpec spec;  // a random model with its own 300-token vocabulary
  spec.vocab_size = 300;
  const std::string other = ::testing::TempDir() + "/kld_other_" + std::to_string(getpid()) + ".gguf";
  {
    const std::vector<uint8_t> bytes = llmpack::testing::make_tiny_gguf(spec);
    std::ofstream(other, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                 static_cast<std::streamsize>(bytes.size()));
  }
  auto mismatch = run_tool("perplexity -m " + model + " -f " + text_path + " -c 64 --kl_divergence " + other);
  EXPECT_NE(mismatch.exit_code, 0);
  EXPECT_NE(mismatch.err.find("--kl_divergence: the base model's tokenizer splits the text into other tokens"),
            std::string::npos)
      << mismatch.err;
  std::filesystem::remove(other);
  std::filesystem::remove(text_path);
}

// perplexity --kv_dtype: the same text scored through an f16 and a q8_0
// cache; f16 keeps the f32 figure to 0.1%, q8_0 to 2% (and a note says which
// cache each run used).
TEST(ToolsCli, PerplexityWithACompactKvCacheStaysClose) {
  LLMPACK_REQUIRE_FIXTURE(model, "gguf/stories260K.gguf");
  LLMPACK_REQUIRE_FIXTURE(golden, "llama2c/stories260K_greedy_256.json");
  const std::string text_path = story_text_file(golden, "ppl_kv");
  auto ppl_with = [&](const std::string& kv, double& ppl) {
    auto r = run_tool("perplexity -m " + model + " -f " + text_path + " -c 64 -t 2 --kv_dtype " + kv);
    ASSERT_EQ(r.exit_code, 0) << kv << ": " << r.err;
    if (kv != "f32") {
      EXPECT_NE(r.err.find("note: KV cache in " + kv), std::string::npos) << r.err;
    }
    const auto at = r.out.find("Final estimate: PPL = ");
    ASSERT_NE(at, std::string::npos) << r.out;
    ppl = std::stod(r.out.substr(at + 22));
  };
  double f32 = 0, f16 = 0, q8 = 0;
  ppl_with("f32", f32);
  ppl_with("f16", f16);
  ppl_with("q8_0", q8);
  EXPECT_NEAR(f16, f32, 1e-3 * f32);
  EXPECT_NEAR(q8, f32, 2e-2 * f32);
  std::filesystem::remove(text_path);
}

TEST(ToolsCli, ChatTemplateRendersBuiltinOrFileAndRefusesWithoutOne) {
  LLMPACK_REQUIRE_FIXTURE(model, "gguf/stories260K.gguf");
  const std::string messages = ::testing::TempDir() + "/messages_" + std::to_string(getpid()) + ".json";
  std::ofstream(messages) << R"([{"role": "user", "content": "Hi!"}])";
  auto r = run_tool("chat-template -m " + model + " --messages " + messages + " --chat_template chatml");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n");
  auto none = run_tool("chat-template -m " + model + " --messages " + messages);
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.err.find("--chat_template NAME"), std::string::npos) << none.err;
  // A Jinja file, as chat takes it; a value that is neither says so.
  const std::string jinja = ::testing::TempDir() + "/template_" + std::to_string(getpid()) + ".jinja";
  std::ofstream(jinja) << "{% for m in messages %}[{{ m.role }}] {{ m.content | trim }}\n{% endfor %}"
                          "{% if add_generation_prompt %}[assistant]{% endif %}";
  auto file = run_tool("chat-template -m " + model + " --messages " + messages + " --chat_template " + jinja);
  ASSERT_EQ(file.exit_code, 0) << file.err;
  EXPECT_EQ(file.out, "[user] Hi!\n[assistant]");
  // The object form: keys beside "messages" are the template's further variables.
  const std::string with_tools = ::testing::TempDir() + "/with_tools_" + std::to_string(getpid()) + ".json";
  std::ofstream(with_tools) << R"({"messages": [{"role": "user", "content": "Hi!"}], "tools": [{"name": "clock"}],
                                   "mode": "on"})";
  std::ofstream(jinja) << "{{ messages[0].content }}|{{ tools[0].name }}|{{ mode }}";
  auto extra = run_tool("chat-template -m " + model + " --messages " + with_tools + " --chat_template " + jinja);
  ASSERT_EQ(extra.exit_code, 0) << extra.err;
  EXPECT_EQ(extra.out, "Hi!|clock|on");
  std::filesystem::remove(with_tools);
  auto neither = run_tool("chat-template -m " + model + " --messages " + messages + " --chat_template /no/such.jinja");
  EXPECT_NE(neither.exit_code, 0);
  EXPECT_NE(neither.err.find("neither a built-in name nor a file"), std::string::npos) << neither.err;
  std::filesystem::remove(messages);
  std::filesystem::remove(jinja);
}

TEST(ToolsCli, TokenizePrintsIdsAndPieces) {
  LLMPACK_REQUIRE_FIXTURE(model, "gguf/stories260K.gguf");
  auto ids = run_tool("tokenize -m " + model + " -p 'Once upon a time' --ids");
  ASSERT_EQ(ids.exit_code, 0) << ids.err;
  EXPECT_EQ(ids.out, "[1, 403, 407, 261, 378]\n");
  auto no_bos = run_tool("tokenize -m " + model + " -p 'Once upon a time' --ids --no_bos");
  EXPECT_EQ(no_bos.out, "[403, 407, 261, 378]\n");
  auto pieces = run_tool("tokenize -m " + model + " -p 'Once'");
  EXPECT_NE(pieces.out.find("403 -> 'Once'"), std::string::npos) << pieces.out;
  auto missing = run_tool("tokenize -m /no/such.gguf -p x");
  EXPECT_NE(missing.exit_code, 0);
}

}  // namespace
