// Issue 3 end to end: `llmpack export` stories260K into each package kind,
// `llmpack run` each with prompts of exactly S and S + 1 tokens, and
// `llmpack inspect` shows the contract and the findings.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/cli_runner.h"
#include "common/fixtures.h"
#include "common/prompt_builder.h"
#include "tokenizer/tokenizer_loader.h"

namespace {

using Outcome = llmpack::testing::CliOutcome;

Outcome llmpack(const std::string& args) { return llmpack::testing::run_llmpack(args); }

nlohmann::json observer(const std::string& out) {
  const auto at = out.find("PyTorchObserver ");
  if (at == std::string::npos) return {};
  return nlohmann::json::parse(out.substr(at + 16, out.find('\n', at) - at - 16));
}

struct KindArgs {
  const char* label;
  const char* flags;
  int64_t bound;
  bool dynamic;
};

TEST(ContractCli, ExportRunInspectEveryKind) {
  LLMPACK_REQUIRE_FIXTURE(bin, "llama2c/stories260K.bin");
  LLMPACK_REQUIRE_FIXTURE(tok_path, "llama2c/tok512.bin");
  auto tok = llmpack::load_tokenizer(tok_path);
  ASSERT_TRUE(tok.ok());
  const std::string dir = ::testing::TempDir() + "/contract_cli_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string prompt_s = dir + "/s.txt", prompt_s1 = dir + "/s1.txt";
  std::ofstream(prompt_s) << llmpack::testing::prompt_of_length(**tok, 128);
  std::ofstream(prompt_s1) << llmpack::testing::prompt_of_length(**tok, 129);
  const std::vector<KindArgs> kinds = {{"dynamic", "", 128, true},
                                       {"legacy", "--token_bound 127", 127, true},
                                       {"static1", "--static_shape", 1, false},
                                       {"static16", "--static_shape --static_chunk 16", 16, false}};
  for (const auto& k : kinds) {
    const std::string pkg = dir + "/" + k.label + ".gguf";
    auto e = llmpack("export --checkpoint " + bin + " --tokenizer_path " + tok_path +
                     " --max_seq_length 128 --max_context_length 512 " + k.flags + " --output " + pkg);
    ASSERT_EQ(e.exit_code, 0) << k.label << ": " << e.err;
    for (const auto& [file, n] : {std::pair{prompt_s, 128}, std::pair{prompt_s1, 129}}) {
      auto r = llmpack("run -m " + pkg + " --prompt_file " + file + " -n 4 --temperature 0 -t 2");
      EXPECT_EQ(r.exit_code, 0) << k.label << " prompt " << n << ": " << r.err;
      EXPECT_EQ(observer(r.out).value("prompt_tokens", -1), n) << k.label;
    }
    auto i = llmpack("inspect --json " + pkg);
    ASSERT_EQ(i.exit_code, 0) << i.err;
    auto j = nlohmann::json::parse(i.out);
    EXPECT_EQ(j["max_seq_len"], 128) << k.label;
    EXPECT_EQ(j["max_context_len"], 512) << k.label;
    EXPECT_EQ(j["token_bound"], k.bound) << k.label;
    EXPECT_EQ(j["enable_dynamic_shape"], k.dynamic) << k.label;
    EXPECT_EQ(j["use_kv_cache"], true);
    EXPECT_EQ(j["kv_cache"], "off_graph");
    // An f32 checkpoint exported with its own types declares no file type: guessed as llama.cpp does.
    EXPECT_EQ(j["tensors"]["file_type"], "(guessed) all F32") << k.label;
    ASSERT_TRUE(j["findings"].is_array());
    const std::string findings = j["findings"].dump();
    if (std::string(k.label) == "legacy") {
      EXPECT_NE(findings.find("get_max_seq_len 128 exceeds forward's token bound 127: prompts are prefilled in chunks of 127"),
                std::string::npos) << findings;
    }
    auto plain = llmpack("inspect " + pkg);
    EXPECT_NE(plain.out.find("S 128, C 512, B " + std::to_string(k.bound)), std::string::npos) << plain.out;
    EXPECT_NE(plain.out.find("\nfile type: (guessed) all F32\n"), std::string::npos) << plain.out;
  }
  std::filesystem::remove_all(dir);
}

TEST(ContractCli, ExportRefusesBadCombinationsWithoutWritingAFile) {
  LLMPACK_REQUIRE_FIXTURE(bin, "llama2c/stories260K.bin");
  LLMPACK_REQUIRE_FIXTURE(tok_path, "llama2c/tok512.bin");
  const std::string out = ::testing::TempDir() + "/refused_" + std::to_string(getpid()) + ".gguf";
  for (const char* flags : {"--max_seq_length 128 --max_context_length 64", "--dynamic_shape --static_chunk 4"}) {
    auto r = llmpack("export --checkpoint " + bin + " --tokenizer_path " + tok_path + " " + flags + " --output " + out);
    EXPECT_NE(r.exit_code, 0) << flags;
    EXPECT_FALSE(r.err.empty()) << flags;
    EXPECT_FALSE(std::filesystem::exists(out)) << flags;
  }
}

}  // namespace
