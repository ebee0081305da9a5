// Issue 3 end to end: `llmpack export` stories260K into each package kind,
// `llmpack run` each with prompts of exactly S and S + 1 tokens, and
// `llmpack inspect` shows the contract and the findings.
#include <gtest/gtest.h>

#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

// `llmpack ARGS` with stdout and stderr on a pseudo-terminal (as a user's
// shell gives them); returns all it printed (the terminal writes \n as \r\n).
std::string run_on_a_terminal(const std::vector<std::string>& args, int* exit_code) {
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  if (pid == 0) {
    std::vector<char*> argv = {const_cast<char*>(LLMPACK_BINARY_PATH)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(LLMPACK_BINARY_PATH, argv.data());
    _exit(127);
  }
  std::string text;
  if (pid < 0) return text;
  char buf[4096];
  for (;;) {  // until the child closes its side (read fails with EIO)
    const ssize_t n = read(master, buf, sizeof buf);
    if (n > 0) text.append(buf, static_cast<size_t>(n));
    else if (n < 0 && errno == EINTR) continue;
    else break;
  }
  close(master);
  int status = 0;
  waitpid(pid, &status, 0);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return text;
}

// E5: on a terminal export shows its progress (tensors done / total, MB
// written) on one line that it rewrites; redirected, it prints none. Either
// way it ends with one summary line: size, dtype mix, S, C, B.
TEST(ContractCli, E5_ExportShowsProgressOnATerminalAndEndsWithAOneLineSummary) {
  LLMPACK_REQUIRE_FIXTURE(bin, "llama2c/stories260K.bin");
  LLMPACK_REQUIRE_FIXTURE(tok_path, "llama2c/tok512.bin");
  const std::string pkg = llmpack::testing::temp_stem("e5") + ".gguf";
  const std::string summary =
      "wrote " + pkg + ": 1.1 MB, 47 tensors (f32 47), S 128, C 512, B 128, dynamic shape, off_graph KV cache";
  auto piped = llmpack("export --checkpoint " + bin + " --tokenizer_path " + tok_path +
                       " --max_seq_length 128 --max_context_length 512 --output " + pkg);
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.out, summary + "\n");
  EXPECT_EQ(piped.err.find("tensors,"), std::string::npos) << "no progress when stderr is not a terminal: " << piped.err;

  int exit_code = -1;
  const std::string shown = run_on_a_terminal({"export", "--checkpoint", bin, "--tokenizer_path", tok_path,
                                               "--max_seq_length", "128", "--max_context_length", "512",
                                               "--output", pkg},
                                              &exit_code);
  ASSERT_EQ(exit_code, 0) << shown;
  EXPECT_NE(shown.find("\r[1/47 tensors, "), std::string::npos) << shown;
  const size_t last = shown.find("\r[47/47 tensors, ");
  ASSERT_NE(last, std::string::npos) << shown;
  EXPECT_NE(shown.find(" MB]\r\n", last), std::string::npos) << "the progress line ends once: " << shown;
  EXPECT_NE(shown.find(summary + "\r\n", last), std::string::npos) << shown;
  std::remove(pkg.c_str());
}

// I1: inspect prints the model's architecture and hyperparameters, the
// tensors' dtype mix and size, the contract, forward's method meta, the
// tokenizer's kind and vocabulary size, the chat template and the findings;
// --json the same as JSON.
TEST(ContractCli, I1_InspectShowsModelTensorsContractForwardTokenizerTemplateAndFindings) {
  LLMPACK_REQUIRE_FIXTURE(bin, "llama2c/stories260K.bin");
  LLMPACK_REQUIRE_FIXTURE(tok_path, "llama2c/tok512.bin");
  const std::string pkg = llmpack::testing::temp_stem("i1") + ".gguf";
  auto e = llmpack("export --checkpoint " + bin + " --tokenizer_path " + tok_path +
                   " --max_seq_length 128 --max_context_length 512 --token_bound 127 --output " + pkg);
  ASSERT_EQ(e.exit_code, 0) << e.err;
  auto plain = llmpack("inspect " + pkg);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  for (const std::string line :
       {"model:     llama 'llama2.c checkpoint', dim 64, ffn 172, 5 layers, 8 heads (4 kv, head_dim 8), vocab 512",
        "tensors:   47 tensors, 260032 parameters: 47 f32 (0.99 MiB)",
        "contract:  llmpack.* keys: S 128, C 512, B 127, dynamic shape, KV cache off_graph, position input start_pos",
        "forward:   tokens int64 [1, 1..127], position int64 [1] -> logits float32 [1, 512]",
        "tokenizer: llama, 512 tokens", "template:  none",
        "get_max_seq_len 128 exceeds forward's token bound 127: prompts are prefilled in chunks of 127"})
    EXPECT_NE(plain.out.find(line), std::string::npos) << line << "\nin:\n" << plain.out;

  auto js = llmpack("inspect --json " + pkg);
  ASSERT_EQ(js.exit_code, 0) << js.err;
  const auto j = nlohmann::json::parse(js.out);
  EXPECT_EQ(j["model"]["architecture"], "llama");
  EXPECT_EQ(j["model"]["dim"], 64);
  EXPECT_EQ(j["model"]["n_layers"], 5);
  EXPECT_EQ(j["model"]["n_kv_heads"], 4);
  EXPECT_EQ(j["tensors"]["count"], 47);
  EXPECT_EQ(j["tensors"]["dtype_counts"]["f32"], 47);
  EXPECT_EQ(j["tensors"]["dtype_bytes"]["f32"], 1040128);
  EXPECT_EQ(j["max_seq_len"], 128);
  EXPECT_EQ(j["max_context_len"], 512);
  EXPECT_EQ(j["token_bound"], 127);
  EXPECT_EQ(j["kv_cache"], "off_graph");
  EXPECT_EQ(j["position_input"], "start_pos");
  EXPECT_EQ(j["forward"]["inputs"][0]["sizes"], nlohmann::json::array({1, 127}));
  EXPECT_EQ(j["forward"]["inputs"][0]["dynamic_dim1"], true);
  EXPECT_EQ(j["tokenizer"]["kind"], "llama");
  EXPECT_EQ(j["tokenizer"]["vocab_size"], 512);
  EXPECT_EQ(j["chat_template"], "none");
  ASSERT_EQ(j["findings"].size(), 1u) << j["findings"].dump();
  EXPECT_NE(j["findings"][0].get<std::string>().find("exceeds forward's token bound 127"), std::string::npos);
  std::remove(pkg.c_str());
}

// inspect --tensors lists every tensor (name, type, shape, bytes, offset), in
// text and in JSON's tensors.list; export's --tensor_dtype (repeatable) put
// the types it shows there.
TEST(ContractCli, I1_InspectTensorsListsEachTensorsTypeShapeBytesAndOffset) {
  LLMPACK_REQUIRE_FIXTURE(bin, "llama2c/stories260K.bin");
  LLMPACK_REQUIRE_FIXTURE(tok_path, "llama2c/tok512.bin");
  const std::string pkg = llmpack::testing::temp_stem("tensors") + ".gguf";
  auto e = llmpack("export --checkpoint " + bin + " --tokenizer_path " + tok_path + " --dtype q4_0" +
                   " --tensor_dtype attn_q=q8_0 --tensor_dtype 'blk\\.4\\.attn_k=q5_0' --output " + pkg);
  ASSERT_EQ(e.exit_code, 0) << e.err;
  auto text = llmpack("inspect --tensors " + pkg);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  std::map<std::string, std::vector<std::string>> rows;  // name -> the row's other fields
  std::istringstream lines(text.out.substr(text.out.find("\n  name ") + 1));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string name, field;
    fields >> name;
    while (fields >> field) rows[name].push_back(field);
  }
  EXPECT_EQ(rows.size(), 48u) << text.out;  // the header and 47 tensors
  const std::vector<std::string> q = rows["blk.0.attn_q.weight"];
  ASSERT_EQ(q.size(), 5u);
  EXPECT_EQ(q[0], "q8_0");
  EXPECT_EQ(q[1] + q[2], "[64,64]");
  EXPECT_EQ(q[3], "4352");  // 64 rows of two 34-byte Q8_0 blocks
  EXPECT_EQ(rows["blk.4.attn_k.weight"].at(0), "q5_0");
  EXPECT_EQ(rows["blk.3.attn_k.weight"].at(0), "q4_0");
  EXPECT_EQ(rows["blk.0.ffn_down.weight"].at(0), "f16");  // 172-wide rows fit no 32-block

  auto js = llmpack("inspect --json --tensors " + pkg);
  ASSERT_EQ(js.exit_code, 0) << js.err;
  const auto j = nlohmann::json::parse(js.out);
  const auto& list = j["tensors"]["list"];
  ASSERT_EQ(list.size(), 47u);
  std::map<std::string, uint64_t> bytes_by_type;
  uint64_t end_of_previous = 0;
  for (const auto& t : list) {
    const uint64_t offset = t["offset"], bytes = t["bytes"];
    EXPECT_GE(offset, end_of_previous) << t.dump();  // in file order, none overlapping
    EXPECT_EQ(offset % 32, 0u) << t.dump();          // GGUF's default alignment
    end_of_previous = offset + bytes;
    bytes_by_type[t["type"]] += bytes;
  }
  for (const auto& [type, total] : bytes_by_type) EXPECT_EQ(j["tensors"]["dtype_bytes"][type], total) << type;
  EXPECT_FALSE(nlohmann::json::parse(llmpack("inspect --json " + pkg).out)["tensors"].contains("list"));
  std::remove(pkg.c_str());
}

// export --dry_run prints each tensor's planned type and size and writes nothing.
TEST(ContractCli, ExportDryRunPrintsThePlanAndWritesNothing) {
  LLMPACK_REQUIRE_FIXTURE(bin, "llama2c/stories260K.bin");
  LLMPACK_REQUIRE_FIXTURE(tok_path, "llama2c/tok512.bin");
  const std::string pkg = llmpack::testing::temp_stem("dry") + ".gguf";
  auto r = llmpack("export --checkpoint " + bin + " --tokenizer_path " + tok_path + " --dtype q8_0 --dry_run -o " + pkg);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(std::filesystem::exists(pkg));
  EXPECT_NE(r.out.find("blk.0.attn_q.weight"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("f32    -> q8_0    64 x 64"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("f32    -> f16     172 x 64"), std::string::npos) << r.out;  // ffn_down: rows fit no block
  EXPECT_NE(r.out.find("dry run: 47 tensors (f16 5, f32 11, q8_0 31)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("; nothing written"), std::string::npos) << r.out;
  auto no_output = llmpack("export --checkpoint " + bin + " --tokenizer_path " + tok_path + " --dry_run");
  EXPECT_EQ(no_output.exit_code, 0) << no_output.err;
}

// --llama_mix: a single type's name asks for llama-quantize's file type of
// that name; its Q4_0 file gives the output matrix (here the embedding,
// which stories260K ties to it) Q6_K, which 64-wide rows take as Q8_0.
TEST(ContractCli, ExportLlamaMixGivesTheFileTypesTensorTypes) {
  LLMPACK_REQUIRE_FIXTURE(bin, "llama2c/stories260K.bin");
  LLMPACK_REQUIRE_FIXTURE(tok_path, "llama2c/tok512.bin");
  const std::string base = "export --checkpoint " + bin + " --tokenizer_path " + tok_path + " --dtype q4_0 --dry_run";
  auto pure = llmpack(base);
  ASSERT_EQ(pure.exit_code, 0) << pure.err;
  EXPECT_NE(pure.out.find("token_embd.weight         f32    -> q4_0 "), std::string::npos) << pure.out;
  auto mixed = llmpack(base + " --llama_mix");
  ASSERT_EQ(mixed.exit_code, 0) << mixed.err;
  EXPECT_NE(mixed.out.find("token_embd.weight         f32    -> q8_0 "), std::string::npos) << mixed.out;
  EXPECT_NE(mixed.err.find("1 matrix with rows that do not fit q4_0 mix's q6_k blocks (e.g. rows of 64) written as "
                           "q8_0"),
            std::string::npos)
      << mixed.err;
  auto alone = llmpack("export --checkpoint " + bin + " --llama_mix --dry_run");
  EXPECT_NE(alone.exit_code, 0);
  EXPECT_NE(alone.err.find("--llama_mix needs --dtype"), std::string::npos) << alone.err;
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
