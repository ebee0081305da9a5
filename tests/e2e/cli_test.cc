// The CLI as a user runs it: the binary, its stdout, stderr and exit code.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "common/cli_runner.h"
#include "common/fixtures.h"
#include "core/cpu_topology.h"
#include "core/thread_placement.h"
#include "engine/llama_program.h"

namespace {

using Outcome = llmpack::testing::CliOutcome;
using llmpack::testing::slurp;

Outcome run_cli(const std::string& args) { return llmpack::testing::run_llmpack(args); }

int count_lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

TEST(Cli, VersionAndHelp) {
  auto v = run_cli("--version");
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_NE(v.out.find("llmpack 0."), std::string::npos);
  auto h = run_cli("run --help");
  EXPECT_EQ(h.exit_code, 0);
  for (const char* flag : {"--model_path", "--tokenizer_path", "--prompt", "--prompt_file", "--temperature",
                           "--seq_len", "--max_new_tokens", "--cpu_threads", "--num_bos", "--num_eos", "--warmup",
                           "--ignore_eos", "--seed", "--top_k", "--top_p", "--min_p", "--repeat_penalty",
                           "--repeat_last_n", "--presence_penalty", "--frequency_penalty", "--logit_bias"})
    EXPECT_NE(h.out.find(flag), std::string::npos) << flag;
}

TEST(Cli, D11_RunGreedyStoryEqualsLlama2cTextWithReport) {
  LLMPACK_REQUIRE_FIXTURE(model, "llama2c/stories260K.bin");
  LLMPACK_REQUIRE_FIXTURE(tok, "llama2c/tok512.bin");
  auto r = run_cli("run -m " + model + " --tokenizer_path " + tok + " -p 'Once upon a time' -n 40 --temperature 0 -t 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("Once upon a time, there was a little girl named Lily. She loved to play outside in the park.", 0), 0u)
      << r.out;
  EXPECT_NE(r.err.find("Generated tokens: 40"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Time to first token"), std::string::npos);
  // S1: the observer line with its keys in order.
  const auto at = r.out.find("PyTorchObserver ");
  ASSERT_NE(at, std::string::npos);
  const std::string line = r.out.substr(at + 16, r.out.find('\n', at) - at - 16);
  auto json = nlohmann::ordered_json::parse(line);
  std::vector<std::string> keys;
  for (auto it = json.begin(); it != json.end(); ++it) keys.push_back(it.key());
  const std::vector<std::string> expected = {
      "prefill_token_per_sec", "decode_token_per_sec", "prompt_tokens", "generated_tokens", "model_load_start_ms",
      "model_load_end_ms", "inference_start_ms", "inference_end_ms", "model_execution_start_ms",
      "model_execution_end_ms", "prompt_eval_end_ms", "first_token_ms", "aggregate_sampling_time_ms",
      "aggregate_model_execution_time_ms", "SCALING_FACTOR_UNITS_PER_SECOND"};
  EXPECT_EQ(keys, expected);
  EXPECT_EQ(json["generated_tokens"], 40);
  EXPECT_EQ(json["prompt_tokens"], 5);
}

TEST(Cli, RunFromGgufMatchesBin) {
  LLMPACK_REQUIRE_FIXTURE(gguf, "gguf/stories260K.gguf");
  LLMPACK_REQUIRE_FIXTURE(bin, "llama2c/stories260K.bin");
  LLMPACK_REQUIRE_FIXTURE(tok, "llama2c/tok512.bin");
  auto a = run_cli("run -m " + gguf + " -p 'The cat' -n 30 --temperature 0 --no_echo");
  auto b = run_cli("run -m " + bin + " --tokenizer_path " + tok + " -p 'The cat' -n 30 --temperature 0 --no_echo");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(a.out.substr(0, a.out.find("PyTorchObserver")), b.out.substr(0, b.out.find("PyTorchObserver")));
}

// run --dump_first_logits: the file holds the logits the first token is
// sampled from, the same floats as the prompt's forward in this process.
TEST(Cli, DumpFirstLogitsWritesThePromptsLastLogits) {
  LLMPACK_REQUIRE_FIXTURE(gguf, "gguf/stories260K.gguf");
  const std::string dump = ::testing::TempDir() + "/first_logits_" + std::to_string(getpid()) + ".f32";
  auto r = run_cli("run -m " + gguf + " -p 'The cat sat' -n 1 --temperature 0 -t 1 --dump_first_logits " + dump);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string bytes = slurp(dump);
  std::remove(dump.c_str());
  llmpack::ProgramOptions options;
  options.cpu_threads = 1;
  auto loaded = llmpack::load_package(gguf, "", options);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const int64_t vocab = loaded->program->model().config().vocab_size;
  ASSERT_EQ(bytes.size(), static_cast<size_t>(vocab) * sizeof(float));
  auto ids = loaded->tokenizer->encode("The cat sat", loaded->tokenizer->default_num_bos(), 0);
  ASSERT_TRUE(ids.ok());
  const std::vector<int64_t> tokens(ids->begin(), ids->end());
  auto logits = loaded->program->forward(tokens, 0);
  ASSERT_TRUE(logits.ok()) << logits.status().message();
  std::vector<float> dumped(static_cast<size_t>(vocab));
  std::memcpy(dumped.data(), bytes.data(), bytes.size());
  const auto last = logits->last();
  EXPECT_EQ(dumped, std::vector<float>(last.begin(), last.end()));

  auto bad = run_cli("run -m " + gguf + " -n 1 --dump_first_logits /no/such/folder/x.f32");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("--dump_first_logits: cannot write '/no/such/folder/x.f32': No such file or directory"),
            std::string::npos)
      << bad.err;
}

TEST(Cli, SeedMakesSamplingRepeatable) {
  LLMPACK_REQUIRE_FIXTURE(gguf, "gguf/stories260K.gguf");
  auto a = run_cli("run -m " + gguf + " -n 30 --temperature 1 --seed 7 --top_p 0.9");
  auto b = run_cli("run -m " + gguf + " -n 30 --temperature 1 --seed 7 --top_p 0.9");
  ASSERT_EQ(a.exit_code, 0);
  EXPECT_EQ(a.out.substr(0, a.out.find("PyTorchObserver")), b.out.substr(0, b.out.find("PyTorchObserver")));
}

// run --kv_dtype: a compact cache replaces the program's f32 one (the note
// says so, with its size), and a story of stories260K reads as with f32.
TEST(Cli, RunWithACompactKvCache) {
  LLMPACK_REQUIRE_FIXTURE(gguf, "gguf/stories260K.gguf");
  auto base = run_cli("run -m " + gguf + " -n 30 --temperature 0 --no_echo");
  ASSERT_EQ(base.exit_code, 0) << base.err;
  EXPECT_EQ(base.err.find("KV cache in"), std::string::npos) << "f32 is the program's own cache: no note";
  const std::string text = base.out.substr(0, base.out.find("PyTorchObserver"));
  for (const std::string kv : {"f16", "q8_0"}) {
    auto r = run_cli("run -m " + gguf + " -n 30 --temperature 0 --no_echo --kv_dtype " + kv);
    ASSERT_EQ(r.exit_code, 0) << kv << ": " << r.err;
    EXPECT_NE(r.err.find("note: KV cache in " + kv + ": "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("(f32: "), std::string::npos) << r.err;
    EXPECT_EQ(r.out.substr(0, r.out.find("PyTorchObserver")), text) << kv;
  }
}

// More threads than the CPUs this process may run on: accepted, with a
// notice (the work still splits over every thread); the default count
// (core/cpu_topology.h) never draws it.
TEST(Cli, ThreadsBeyondTheUsableCpusRunWithANotice) {
  LLMPACK_REQUIRE_FIXTURE(gguf, "gguf/stories260K.gguf");
  const int threads = static_cast<int>(std::thread::hardware_concurrency()) + 1;  // above any affinity mask
  auto r = run_cli("run -m " + gguf + " -p 'Once upon' -n 4 --temperature 0 -t " + std::to_string(threads));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("llmpack: note: --cpu_threads " + std::to_string(threads) + " exceeds the "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(" this process may run on"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("Once upon"), std::string::npos) << r.out;
  auto plain = run_cli("run -m " + gguf + " -p 'Once upon' -n 4 --temperature 0");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.err.find("--cpu_threads"), std::string::npos) << plain.err;
}

// -C / --cpu-range / --cpu-strict / --poll / --prio, as llama-cli takes them:
// the threads are placed (a note reads their CPUs back from the kernel) and
// the text is the unplaced run's; without the flags, no note. run, chat and
// perplexity share the flags.
TEST(Cli, ThreadPlacementFlagsPlaceTheThreadsAndSayWhere) {
  LLMPACK_REQUIRE_FIXTURE(gguf, "gguf/stories260K.gguf");
  const std::string base = "run -m " + gguf + " -p 'Once upon' -n 12 --temperature 0 --no_echo -t 3 ";
  auto plain = run_cli(base);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.err.find("--cpu-strict"), std::string::npos) << plain.err;
  const std::string text = plain.out.substr(0, plain.out.find("PyTorchObserver"));

  // The CPUs this test may run on (the CLI inherits them); the first of them:
  const std::vector<int> usable = llmpack::usable_cpu_list();
  const std::string first = std::to_string(usable.front());
  const std::string first_mask = llmpack::cpu_mask_text({usable.front()});
  const std::string all_on_first =
      ": thread 0 on CPU " + first + ", thread 1 on CPU " + first + ", thread 2 on CPU " + first;

  auto strict = run_cli(base + "-C " + first_mask + " --cpu-strict 1 --poll 0 --prio -1");
  ASSERT_EQ(strict.exit_code, 0) << strict.err;
  EXPECT_NE(strict.err.find("note: -C " + first_mask + " --cpu-strict 1" + all_on_first), std::string::npos)
      << strict.err;
  EXPECT_EQ(strict.out.substr(0, strict.out.find("PyTorchObserver")), text);

  auto range = run_cli(base + "--cpu-range " + first + "-" + first);
  ASSERT_EQ(range.exit_code, 0) << range.err;
  EXPECT_NE(range.err.find("note: -C " + first_mask + " --cpu-strict 0" + all_on_first), std::string::npos)
      << range.err;
  EXPECT_EQ(range.out.substr(0, range.out.find("PyTorchObserver")), text);
  auto open_start = run_cli(base + "--cpu-range=-" + first);  // from the first CPU the process may run on
  ASSERT_EQ(open_start.exit_code, 0) << open_start.err;
  EXPECT_NE(open_start.err.find("note: -C " + first_mask + " --cpu-strict 0: "), std::string::npos) << open_start.err;
  auto open_end = run_cli(base + "--cpu-range " + first + "- --cpu-strict 1");  // to the last
  ASSERT_EQ(open_end.exit_code, 0) << open_end.err;
  EXPECT_NE(open_end.err.find("note: -C " + llmpack::cpu_mask_text(usable) + " --cpu-strict 1: thread 0 on CPU " +
                              first + ", "),
            std::string::npos)
      << open_end.err;

  // --numa: on this machine's nodes (one, or none in sysfs: every CPU the
  // process may run on), each thread on all of a node's CPUs.
  const std::string on_usable = (usable.size() == 1 ? " on CPU " : " on CPUs ") + llmpack::cpu_list_text(usable);
  for (const char* strategy : {"distribute", "isolate", "numactl"}) {
    auto numa = run_cli(base + "--numa " + strategy);
    ASSERT_EQ(numa.exit_code, 0) << numa.err;
    EXPECT_NE(numa.err.find(std::string("note: --numa ") + strategy + ": thread 0" + on_usable + ", thread 1" +
                            on_usable + ", thread 2" + on_usable + "\n"),
              std::string::npos)
        << numa.err;
    EXPECT_EQ(numa.out.substr(0, numa.out.find("PyTorchObserver")), text) << strategy;
  }

  for (const char* command : {"chat", "perplexity"}) {
    auto help = run_cli(std::string(command) + " --help");
    for (const char* flag : {"--cpu-mask", "--cpu-range", "--cpu-strict", "--poll", "--prio", "--numa"})
      EXPECT_NE(help.out.find(flag), std::string::npos) << command << " " << flag;
  }
}

struct BadInput {
  const char* label;
  std::string args;
  std::string expected;  // a fragment of the one-line error
};

TEST(Cli, BadInputGetsOneClearLineAndNonZeroExit) {
  LLMPACK_REQUIRE_FIXTURE(gguf, "gguf/stories260K.gguf");
  LLMPACK_REQUIRE_FIXTURE(bin, "llama2c/stories260K.bin");
  LLMPACK_REQUIRE_FIXTURE(big_tok, "llama2c/tokenizer.bin");
  LLMPACK_REQUIRE_FIXTURE(meta_pth, "pytorch/consolidated.00.pth");
  const std::string damaged = ::testing::TempDir() + "/damaged_" + std::to_string(getpid()) + ".gguf";
  {
    std::string bytes = slurp(gguf);
    std::ofstream(damaged, std::ios::binary) << bytes.substr(0, 5000);
  }
  const std::string folder = ::testing::TempDir() + "/folder_" + std::to_string(getpid());
  std::filesystem::create_directory(folder);
  const std::string beyond = std::to_string(std::thread::hardware_concurrency());  // above any affinity mask
  const std::vector<BadInput> cases = {
      {"missing model", "run -m /no/such/model.gguf", "does not exist"},
      {"damaged file", "run -m " + damaged, "GGUF"},
      {"llama2c without tokenizer", "run -m " + bin, "--tokenizer_path"},
      {"vocab mismatch", "run -m " + bin + " --tokenizer_path " + big_tok, "32000"},
      {"negative temperature", "run -m " + gguf + " --temperature -0.5", "--temperature"},
      {"zero threads", "run -m " + gguf + " -t 0", "--cpu_threads"},
      {"zero export threads", "export --checkpoint " + gguf + " -o /tmp/never.gguf -t 0", "--cpu_threads"},
      {"unknown kv dtype", "run -m " + gguf + " --kv_dtype f8", "--kv_dtype"},
      {"unknown flag", "run -m " + gguf + " --frobnicate", "frobnicate"},
      {"empty prompt", "run -m " + gguf + " -p '' --num_bos 0", "prompt"},
      {"no budget", "run -m " + gguf + " --seq_len 2 -n 5", "budget"},
      {"prompt file missing", "run -m " + gguf + " --prompt_file /no/such/prompt.txt", "prompt_file"},
      {"cpu mask not hexadecimal", "run -m " + gguf + " -C 0xzz", "-C: a CPU mask is hexadecimal digits"},
      {"cpu range backwards", "run -m " + gguf + " --cpu-range 3-1", "expected LO-HI with 0 <= LO <= HI"},
      {"cpu range beyond the process's CPUs", "run -m " + gguf + " --cpu-range " + beyond + "-" + beyond,
       "is not among those this process may run on"},
      {"realtime priority", "run -m " + gguf + " --prio 3", "--prio: 3 (realtime) is refused"},
      {"numa mirror", "run -m " + gguf + " --numa mirror", "--numa: expected distribute, isolate or numactl, got 'mirror'"},
      {"numa beside a mask", "run -m " + gguf + " --numa isolate -C 0x1", "--cpu-mask excludes --numa"},
      {"poll level", "run -m " + gguf + " --poll 101", "--poll"},
      {"cpu strict level", "run -m " + gguf + " --cpu-strict 2", "--cpu-strict"},
      {"negative seed", "run -m " + gguf + " --seed -5", "--seed: expected a non-negative integer, found -5"},
      {"presence penalty beyond OpenAI's range", "run -m " + gguf + " --presence_penalty 2.5", "--presence_penalty"},
      {"frequency penalty beyond OpenAI's range", "chat -m " + gguf + " --frequency_penalty -3", "--frequency_penalty"},
      {"negative penalty window", "run -m " + gguf + " --repeat_last_n -1", "--repeat_last_n"},
      {"logit bias without a sign", "run -m " + gguf + " --logit_bias 12",
       "--logit_bias: '12': expected TOKEN_ID+BIAS"},
      {"logit bias beyond the vocabulary", "run -m " + gguf + " --logit_bias 600+1",
       "logit_bias names token 600, beyond the vocabulary of 512 tokens"},
      {"seed not a number", "chat -m " + gguf + " --seed 7x", "--seed: expected a non-negative integer, found 7x"},
      // A folder where a file is expected (read as a file it was empty, or threw and aborted).
      {"prompt file is a folder", "run -m " + gguf + " --prompt_file " + folder,
       "--prompt_file: '" + folder + "' is a directory, expected a file"},
      {"perplexity text is a folder", "perplexity -m " + gguf + " -f " + folder,
       "-f: '" + folder + "' is a directory, expected a file"},
      {"messages file is a folder", "chat-template -m " + gguf + " --chat_template chatml --messages " + folder,
       "--messages: '" + folder + "' is a directory, expected a file"},
      {"chat template file is a folder",
       "chat-template -m " + gguf + " --chat_template " + folder + " --messages " + folder,
       "--chat_template: '" + folder + "' is a directory, expected a file"},
      {"export params is a folder",
       "export --checkpoint " + meta_pth + " --params " + folder + " -o " + folder + "/x.gguf",
       "--params: '" + folder + "' is a directory, expected a file"},
      {"export output is a folder", "export --checkpoint " + gguf + " -o " + folder,
       "--output '" + folder + "' is a directory, expected the path of the .gguf file to write"},
      {"bench's second model is missing", "bench -m " + gguf + " -m /no/such/model.gguf -p 8 -n 4 -r 1",
       "-m '/no/such/model.gguf': no such file (every -m is checked before the tests run)"},
      {"export output's folder is missing", "export --checkpoint " + gguf + " -o " + folder + "/no/x.gguf",
       "--output '" + folder + "/no/x.gguf': the folder '" + folder + "/no' does not exist"},
  };
  for (const auto& c : cases) {
    auto r = run_cli(c.args);
    EXPECT_NE(r.exit_code, 0) << c.label;
    EXPECT_NE(r.exit_code, -1) << c.label << " crashed";
    EXPECT_EQ(count_lines(r.err), 1) << c.label << ": " << r.err;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << c.label << ": " << r.err;
  }
  std::remove(damaged.c_str());  // the test leaves nothing behind in the temp folder
  std::filesystem::remove(folder);
}

}  // namespace
