// `llmpack bench` with the llama-bench flags its users' scripts pass beyond
// -m -p -n -r -t -o: the range syntax of the numeric lists, -pg, -b, -ub, -ctk /
// -ctv, -ngl, -fa, -mmp, -lm, -oe, --progress, and the build fields of the JSON. Synthetic models
// cut to one layer and a small vocabulary, as in bench_test.cc.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/cli_runner.h"
#include "common/fixtures.h"
#include "core/cpu_topology.h"
#include "core/thread_placement.h"

// A named namespace: CI's unity builds compile this file with bench_test.cc,
// whose anonymous namespace has its own bench() and kSmall.
namespace bench_llama_flags {

using Outcome = llmpack::testing::CliOutcome;

Outcome bench(const std::string& args) { return llmpack::testing::run_llmpack("bench " + args); }

const std::string kSmall = " --synthetic stories110m:q4_0 --synthetic_layers 1 --synthetic_vocab 512 -t 2 -r 1 ";

// The "test" field of each JSON record, in order.
std::vector<std::string> test_names(const Outcome& r) {
  std::vector<std::string> names;
  for (const auto& rec : nlohmann::json::parse(r.out)) names.push_back(rec["test"].get<std::string>());
  return names;
}

// An md table whose header ends with `header` ("| threads | fa | test | t/s |")
// and which has each of `rows` ("| 2 | 1 | pp4 |"), from a run that succeeded.
void expect_table(const Outcome& r, const std::string& header, const std::vector<std::string>& rows) {
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(header), std::string::npos) << header << " in: " << r.out;
  for (const auto& row : rows) EXPECT_NE(r.out.find(row), std::string::npos) << row << " in: " << r.out;
}

// Each record's n_batch and n_ubatch, in order.
void expect_batch_fields(const nlohmann::json& records, const std::vector<int>& batches,
                         const std::vector<int>& ubatches) {
  ASSERT_EQ(records.size(), batches.size()) << records;
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(records[i]["n_batch"], batches[i]) << records[i];
    EXPECT_EQ(records[i]["n_ubatch"], ubatches[i]) << records[i];
  }
}

// llama-bench's FIRST-LAST, FIRST-LAST+STEP and FIRST-LAST*FACTOR items,
// mixed with plain numbers, in the order given.
TEST(BenchLlamaFlags, NumericListsTakeLlamaBenchRanges) {
  auto r = bench(kSmall + "-p 4-16*2,3 -n 1-3 -o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test_names(r), (std::vector<std::string>{"pp4", "pp8", "pp16", "pp3", "tg1", "tg2", "tg3"}));
  auto step = bench(kSmall + "-p 2-9+3 -n 0 -d 0-8+8 -o json");
  ASSERT_EQ(step.exit_code, 0) << step.err;
  EXPECT_EQ(test_names(step),
            (std::vector<std::string>{"pp2", "pp5", "pp8", "pp2 @ d8", "pp5 @ d8", "pp8 @ d8"}));
  auto threads = bench("--synthetic stories110m:q4_0 --synthetic_layers 1 --synthetic_vocab 512 -t 1-2 -r 1 -p 4 "
                       "-n 0 -o json");
  ASSERT_EQ(threads.exit_code, 0) << threads.err;
  const auto json = nlohmann::json::parse(threads.out);
  ASSERT_EQ(json.size(), 2u);
  EXPECT_EQ(json[0]["n_threads"], 1);
  EXPECT_EQ(json[1]["n_threads"], 2);
}

// A flag given twice adds to its list, as llama-bench's do.
TEST(BenchLlamaFlags, RepeatedFlagsAddToTheList) {
  auto r = bench(kSmall + "-p 4 -p 8,6 -n 0 -o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test_names(r), (std::vector<std::string>{"pp4", "pp8", "pp6"}));
}

// -o jsonl: each record a line of JSON, printed as its test ends.
TEST(BenchLlamaFlags, JsonLinesGiveOneRecordALine) {
  auto r = bench(kSmall + "-p 4 -n 2 -o jsonl");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> names;
  size_t start = 0;
  for (size_t end; (end = r.out.find('\n', start)) != std::string::npos; start = end + 1) {
    const auto rec = nlohmann::json::parse(r.out.substr(start, end - start));
    ASSERT_TRUE(rec.is_object()) << rec;
    EXPECT_GT(rec["avg_ts"].get<double>(), 0.0);
    names.push_back(rec["test"].get<std::string>());
  }
  EXPECT_EQ(start, r.out.size()) << "every line ends with a newline";
  EXPECT_EQ(names, (std::vector<std::string>{"pp4", "tg2"}));
  EXPECT_NE(r.err.find("kv cache:"), std::string::npos) << "notes go to stderr: " << r.err;
}

// -oe FORMAT (llama-bench's -oe): the records again on stderr, in that
// format, while stdout keeps -o's; the notes follow the md table on stdout.
TEST(BenchLlamaFlags, OutputErrPrintsTheRecordsAgainOnStderr) {
  auto r = bench(kSmall + "-p 4 -n 2 -oe jsonl");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("| threads | test | t/s |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kv cache:"), std::string::npos) << "notes after the md table: " << r.out;
  std::vector<std::string> names;
  size_t start = 0;
  for (size_t end; (end = r.err.find('\n', start)) != std::string::npos; start = end + 1)
    names.push_back(nlohmann::json::parse(r.err.substr(start, end - start))["test"].get<std::string>());
  EXPECT_EQ(names, (std::vector<std::string>{"pp4", "tg2"})) << r.err;
  // -o json with -oe=md: the JSON alone on stdout; the table, then the notes, on stderr.
  auto swapped = bench(kSmall + "-p 4 -n 2 -o json -oe=md");
  ASSERT_EQ(swapped.exit_code, 0) << swapped.err;
  EXPECT_EQ(test_names(swapped), (std::vector<std::string>{"pp4", "tg2"}));
  const size_t table = swapped.err.find("| 2 | tg2 |"), notes = swapped.err.find("kv cache:");
  EXPECT_NE(table, std::string::npos) << swapped.err;
  EXPECT_NE(notes, std::string::npos) << swapped.err;
  EXPECT_LT(table, notes) << swapped.err;
  auto none = bench(kSmall + "-p 4 -n 0 -o csv -oe none");
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(none.err.find("pp4"), std::string::npos) << none.err;
}

// -o sql: the table `test` with the CSV's columns, created if missing, then
// an INSERT a test, its text values quoted as SQL quotes them ('' inside).
TEST(BenchLlamaFlags, SqlCreatesTheTableAndInsertsEachTest) {
  const std::string path = llmpack::testing::temp_stem("sql") + "_it's.gguf";
  auto saved = bench("--synthetic stories110m:q4_0 --synthetic_layers 1 --synthetic_vocab 256 --save \"" + path + "\"");
  ASSERT_EQ(saved.exit_code, 0) << saved.err;
  auto r = bench("-m \"" + path + "\" -p 4 -n 1 -t 1 -r 1 -o sql");
  std::remove(path.c_str());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(r.out.rfind("CREATE TABLE IF NOT EXISTS test (\n  build_commit TEXT,\n  build_number INTEGER,", 0), 0u)
      << r.out;
  std::vector<std::string> inserts;
  size_t start = 0;
  for (size_t end; (end = r.out.find('\n', start)) != std::string::npos; start = end + 1)
    if (r.out.compare(start, 19, "INSERT INTO test (b") == 0) inserts.push_back(r.out.substr(start, end - start));
  ASSERT_EQ(inserts.size(), 2u) << r.out;
  std::string quoted;  // the path with each ' doubled
  for (char c : path) quoted.append(c == '\'' ? 2 : 1, c);
  const std::string filename_value = std::string(", '").append(quoted).append("', ");
  for (const auto& line : inserts) {
    EXPECT_NE(line.find(filename_value), std::string::npos) << line;
    EXPECT_EQ(line.substr(line.size() - 2), ");") << line;
    EXPECT_NE(line.find(" flash_attn, devices, tensor_split, tensor_buft_overrides, use_mmap, load_mode, lazy_mode, "
                        "embeddings, no_op_offload, no_host, repack, fit_target, fit_min_ctx, n_prompt, n_gen, "),
              std::string::npos)
        << line;
    EXPECT_NE(line.find(", -1, 'auto', '0.00', 'none', 1, 'auto', 'auto', 0, 0, 0, 0, 0, 0, "), std::string::npos)
        << "flash_attn, devices, tensor_split, tensor_buft_overrides, use_mmap (a boolean as 1), load_mode, "
           "lazy_mode, embeddings, no_op_offload, no_host, repack, fit_target, fit_min_ctx: "
        << line;
  }
  EXPECT_NE(inserts[0].find(", 'pp4', "), std::string::npos) << inserts[0];
  EXPECT_NE(inserts[1].find(", 'tg1', "), std::string::npos) << inserts[1];
  EXPECT_NE(r.err.find("kv cache:"), std::string::npos) << "notes go to stderr: " << r.err;
}

// --no-warmup skips the untimed pass (the tests still run); --delay sleeps
// before each test, so two tests take at least twice the delay.
TEST(BenchLlamaFlags, NoWarmupAndDelayBetweenTests) {
  auto cold = bench(kSmall + "-p 4 -n 2 --no-warmup --progress -o json");
  ASSERT_EQ(cold.exit_code, 0) << cold.err;
  EXPECT_EQ(test_names(cold), (std::vector<std::string>{"pp4", "tg2"}));
  EXPECT_EQ(cold.err.find("warmup"), std::string::npos) << cold.err;
  auto warm = bench(kSmall + "-p 4 -n 2 --progress -o json");
  ASSERT_EQ(warm.exit_code, 0) << warm.err;
  EXPECT_NE(warm.err.find("llmpack bench: stories110m (synthetic), 2 threads: warmup\n"), std::string::npos) << warm.err;
  const auto t0 = std::chrono::steady_clock::now();
  auto delayed = bench(kSmall + "-p 4 -n 2 --delay 0.6 -o json");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(delayed.exit_code, 0) << delayed.err;
  EXPECT_GE(seconds, 1.2);
  auto bad = bench(kSmall + "--delay -1");
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
}

// -pg PP,TG: a prompt then tokens generated after it, one test whose speed
// counts both, named as llama-bench names it; the context check counts both.
TEST(BenchLlamaFlags, PromptThenGenerationIsOneTest) {
  auto r = bench(kSmall + "-p 0 -n 0 -pg 8,2 -pg=6,3 -d 0,16 -o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(test_names(r), (std::vector<std::string>{"pp8+tg2", "pp6+tg3", "pp8+tg2 @ d16", "pp6+tg3 @ d16"}));
  for (const auto& rec : json) {
    const int64_t tokens = rec["n_prompt"].get<int64_t>() + rec["n_gen"].get<int64_t>();
    EXPECT_EQ(tokens, rec["test"].get<std::string>().rfind("pp8", 0) == 0 ? 10 : 9) << rec;
    EXPECT_NEAR(rec["avg_ts"].get<double>(), 1e9 * static_cast<double>(tokens) / rec["avg_ns"].get<double>(),
                1e-6 * rec["avg_ts"].get<double>());
  }
  auto md = bench(kSmall + "-p 0 -n 0 -pg 8,2 --profile");
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("| pp8+tg2 |"), std::string::npos) << md.out;
  // One call for the prompt, one for each generated token.
  EXPECT_NE(md.out.find("pp8+tg2, 2 threads, time per stage:"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("a repetition, in 3 forward calls)"), std::string::npos) << md.out;
}

TEST(BenchLlamaFlags, PromptThenGenerationMustFitTheContext) {
  LLMPACK_REQUIRE_FIXTURE(model, "llama2c/stories260K.bin");  // a cache of 512 positions
  auto fits = bench("-m " + model + " -p 0 -n 0 -pg 500,12 -r 1 -t 1 -o json");
  ASSERT_EQ(fits.exit_code, 0) << fits.err;
  auto over = bench("-m " + model + " -p 0 -n 0 -pg 500,13 -r 1 -t 1");
  EXPECT_NE(over.exit_code, 0);
  EXPECT_NE(over.err.find("a test of 513 tokens needs 513 positions of context"), std::string::npos) << over.err;
}

// -ub: each pp and -pg test at each chunk size (capped at the prompt), the
// chunk in n_batch / n_ubatch and, in the table, a column of its own; tg
// tests run once, a token a call.
TEST(BenchLlamaFlags, UbatchSetsTokensPerPrefillCall) {
  auto r = bench(kSmall + "-p 16 -n 2 -pg 12,1 -ub 4,32 -o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(test_names(r), (std::vector<std::string>{"pp16", "pp12+tg1", "pp16", "pp12+tg1", "tg2"}));
  expect_batch_fields(json, {4, 4, 16, 12, 1}, {4, 4, 16, 12, 1});
  // The calls themselves, counted by --profile: a prompt of 16 in chunks of 4.
  auto md = bench(kSmall + "-p 16 -n 0 -ub 4 --profile");
  expect_table(md, "| threads | n_ubatch | test | t/s |", {"| 2 | 4 | pp16 |"});
  EXPECT_NE(md.out.find("a repetition, in 4 forward calls)"), std::string::npos) << md.out;
  auto plain = bench(kSmall + "-p 16 -n 0");
  EXPECT_EQ(plain.out.find("n_ubatch"), std::string::npos) << plain.out;
  EXPECT_EQ(plain.out.find("n_batch"), std::string::npos) << plain.out;
}

// -b: the prompt handed over in pieces of -b tokens, each sent in calls of
// -ub tokens, as llama.cpp splits a logical batch into physical ones; -ub
// above -b is lowered to it. Every -b runs with every -ub.
TEST(BenchLlamaFlags, BatchCutsThePromptBeforeUbatch) {
  auto r = bench(kSmall + "-p 16 -n 1 -b 8,6 -ub 4,32 -o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(test_names(r), (std::vector<std::string>{"pp16", "pp16", "pp16", "pp16", "tg1"}));
  expect_batch_fields(json, {8, 8, 6, 6, 1}, {4, 8, 4, 6, 1});
  // The calls, counted by --profile: 16 tokens as 8 + 8, each as 4 + 4;
  // as 6 + 6 + 4, each as 4 + 2, 4 + 2 and 4 (llama.cpp's order too).
  const std::pair<std::string, int> calls[] = {{"-b 8 -ub 4", 4}, {"-b 6 -ub 4", 5}, {"-b 6", 3}, {"-b 32 -ub 4", 4}};
  for (const auto& [flags, n] : calls) {
    auto md = bench(kSmall + "-p 16 -n 0 --profile " + flags);
    ASSERT_EQ(md.exit_code, 0) << flags << ": " << md.err;
    EXPECT_NE(md.out.find("a repetition, in " + std::to_string(n) + " forward calls)"), std::string::npos)
        << flags << ": " << md.out;
  }
  expect_table(bench(kSmall + "-p 16 -n 0 -b 6 -ub 4"), "| threads | n_batch | n_ubatch | test | t/s |",
               {"| 2 | 6 | 4 | pp16 |"});
  expect_table(bench(kSmall + "-p 16 -n 0 -b 6"), "| threads | n_batch | test | t/s |", {"| 2 | 6 | pp16 |"});
}

// -fa, -mmp and -lm with the values that name what llmpack does anyway
// (a fused attention kernel, a mapped file) run the same tests as without
// them; other values are refused (BadListsAndPairsGiveOneLine). The records
// say what was asked, with llama-bench's numbers: flash_attn 1 (1, on) or
// -1 (auto, also when -fa is not given), load_mode auto or mmap.
TEST(BenchLlamaFlags, FlagsNamingWhatLlmpackDoesAnywayAreAccepted) {
  auto plain = bench(kSmall + "-p 4 -n 1 -o json");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  for (const auto& rec : nlohmann::json::parse(plain.out)) {
    EXPECT_EQ(rec["flash_attn"], -1) << rec;
    EXPECT_EQ(rec["load_mode"], "auto") << rec;
  }
  const std::pair<std::string, int> given[] = {{"-fa 1", 1}, {"-fa on", 1}, {"-fa=1 -mmp 1", 1},
                                               {"-mmp=1 -lm mmap", -1}, {"-lm auto", -1}};
  for (const auto& [flags, fa] : given) {
    auto r = bench(kSmall + "-p 4 -n 1 -o json " + flags);
    ASSERT_EQ(r.exit_code, 0) << flags << ": " << r.err;
    EXPECT_EQ(test_names(r), test_names(plain)) << flags;
    for (const auto& rec : nlohmann::json::parse(r.out)) {
      EXPECT_EQ(rec["flash_attn"], fa) << flags << ": " << rec;
      EXPECT_EQ(rec["load_mode"], flags.find("mmap") != std::string::npos ? "mmap" : "auto") << flags << ": " << rec;
    }
  }
}

// A list given to -fa or -lm runs every test once for each value (each pair
// of values when both are lists), as llama-bench runs each value of a list;
// the table then has llama-bench's fa and lm columns.
TEST(BenchLlamaFlags, EachFlashAttnAndLoadModeValueRunsTheTests) {
  auto r = bench(kSmall + "-p 4 -n 1 -fa on,auto -lm mmap,auto -o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(test_names(r), (std::vector<std::string>{"pp4", "tg1", "pp4", "tg1", "pp4", "tg1", "pp4", "tg1"}));
  const std::vector<std::pair<int, std::string>> modes = {{1, "mmap"}, {1, "auto"}, {-1, "mmap"}, {-1, "auto"}};
  ASSERT_EQ(json.size(), 2 * modes.size());
  for (size_t i = 0; i < json.size(); ++i) {
    EXPECT_EQ(json[i]["flash_attn"], modes[i / 2].first) << json[i];
    EXPECT_EQ(json[i]["load_mode"], modes[i / 2].second) << json[i];
  }
  // -fa given twice, as a list
  expect_table(bench(kSmall + "-p 4 -n 0 -fa 1 -fa auto"), "| threads | fa | test | t/s |",
               {"| 2 | 1 | pp4 |", "| 2 | -1 | pp4 |"});
  expect_table(bench(kSmall + "-p 4 -n 0 -lm mmap"), "| threads | lm | test | t/s |", {"| 2 | mmap | pp4 |"});
  auto plain = bench(kSmall + "-p 4 -n 0");
  EXPECT_EQ(plain.out.find("| fa |"), std::string::npos) << plain.out;
}

// -C, --cpu-strict and --poll (llama-bench's thread placement) are lists
// whose every combination runs the tests, recorded in cpu_mask, cpu_strict
// and poll; a note says where the threads were, read back from the kernel.
TEST(BenchLlamaFlags, EachPlacementValueRunsTheTestsWithItsThreadsPlaced) {
  const std::vector<int> usable = llmpack::usable_cpu_list();
  const std::vector<int> two = usable.size() >= 2 ? std::vector<int>{usable[0], usable[1]} : usable;
  const std::string mask = llmpack::cpu_mask_text(two);
  auto r = bench(kSmall + "-p 4 -n 1 -C " + mask + " --cpu-strict 0,1 --poll 0,50 -o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto json = nlohmann::json::parse(r.out);
  ASSERT_EQ(json.size(), 8u);
  const std::vector<std::pair<bool, int>> modes = {{false, 0}, {false, 50}, {true, 0}, {true, 50}};
  for (size_t i = 0; i < json.size(); ++i) {
    EXPECT_EQ(json[i]["test"], i % 2 ? "tg1" : "pp4") << json[i];
    EXPECT_EQ(json[i]["cpu_mask"], mask) << json[i];
    EXPECT_EQ(json[i]["cpu_strict"], modes[i / 2].first) << json[i];
    EXPECT_EQ(json[i]["poll"], modes[i / 2].second) << json[i];
  }
  const std::string all = llmpack::cpu_list_text(two);
  const std::string loose = "-C " + mask + " --cpu-strict 0: thread 0 on CPU" + (two.size() == 1 ? " " : "s ") +
                            all + ", thread 1 on CPU" + (two.size() == 1 ? " " : "s ") + all;
  EXPECT_NE(r.err.find(loose), std::string::npos) << r.err;
  const std::string strict = "-C " + mask + " --cpu-strict 1: thread 0 on CPU " + std::to_string(two[0]) +
                             ", thread 1 on CPU " + std::to_string(two[two.size() - 1]);
  EXPECT_NE(r.err.find(strict), std::string::npos) << r.err;
  // Not given: recorded as llama-bench's defaults, no columns, no note.
  auto plain = bench(kSmall + "-p 4 -n 0 -o json");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const auto rec = nlohmann::json::parse(plain.out)[0];
  EXPECT_EQ(rec["cpu_mask"], "0x0");
  EXPECT_EQ(rec["cpu_strict"], false);
  EXPECT_EQ(rec["poll"], 50);
  EXPECT_EQ(plain.err.find("--cpu-strict"), std::string::npos) << plain.err;
  expect_table(bench(kSmall + "-p 4 -n 0 -C " + mask + " --poll 10"), "| threads | cpu_mask | poll | test | t/s |",
               {"| 2 | " + mask + " | 10 | pp4 |"});
  auto csv = bench(kSmall + "-p 4 -n 0 --cpu-strict 1 -o csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_NE(csv.out.find(",n_threads,cpu_mask,cpu_strict,poll,"), std::string::npos) << csv.out;
  EXPECT_NE(csv.out.find(",2,0x0,1,50,"), std::string::npos) << csv.out;
}

// --numa, as llama-bench takes it (one strategy): the threads on this
// machine's NUMA nodes (one here, or none in sysfs: the process's CPUs), a
// note saying where; cpu_mask is recorded as llama-bench does without -C.
TEST(BenchLlamaFlags, NumaPlacesTheThreadsOnTheNodesAndSaysWhere) {
  const std::vector<int> usable = llmpack::usable_cpu_list();
  const std::string on = (usable.size() == 1 ? " on CPU " : " on CPUs ") + llmpack::cpu_list_text(usable);
  for (const char* strategy : {"distribute", "isolate"}) {
    auto r = bench(kSmall + "-p 4 -n 0 --numa " + strategy + " -o json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto rec = nlohmann::json::parse(r.out)[0];
    EXPECT_EQ(rec["cpu_mask"], "0x0");
    EXPECT_EQ(rec["cpu_strict"], false);
    EXPECT_NE(r.err.find(std::string("--numa ") + strategy + ": thread 0" + on + ", thread 1" + on + "\n"),
              std::string::npos)
        << r.err;
  }
}

// --prio: a lower priority is always allowed; a higher one where the process
// may raise it (root, CAP_SYS_NICE), else refused saying what it needs.
TEST(BenchLlamaFlags, PriorityLevelsRunOrSayWhatTheyNeed) {
  auto low = bench(kSmall + "-p 4 -n 0 --prio -1");
  ASSERT_EQ(low.exit_code, 0) << low.err;
  EXPECT_NE(low.out.find("priority: level -1 (--prio) for every thread"), std::string::npos) << low.out;
  auto high = bench(kSmall + "-p 4 -n 0 --prio 2");
  if (high.exit_code == 0) {
    EXPECT_NE(high.out.find("priority: level 2 (--prio)"), std::string::npos) << high.out;
  } else {
    EXPECT_EQ(high.exit_code, 1);
    EXPECT_NE(high.err.find("--prio: setting priority level 2 (nice -10)"), std::string::npos) << high.err;
  }
  auto normal = bench(kSmall + "-p 4 -n 0 --prio 0");
  ASSERT_EQ(normal.exit_code, 0) << normal.err;
  EXPECT_EQ(normal.out.find("priority:"), std::string::npos) << normal.out;
}

// -ctk / -ctv (also as -ctk=TYPE) choose the cache type; llmpack's cache has
// one type for keys and values, so flags that disagree are refused.
TEST(BenchLlamaFlags, CacheTypeFlagsAgreeOrAreRefused) {
  auto r = bench(kSmall + "-p 4 -n 1 -ctk q8_0 -ctv=q8_0 -o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const auto& rec : nlohmann::json::parse(r.out)) {
    EXPECT_EQ(rec["type_k"], "q8_0");
    EXPECT_EQ(rec["type_v"], "q8_0");
  }
  EXPECT_NE(r.err.find("kv cache: q8_0 keys and values"), std::string::npos) << r.err;
  auto k_only = bench(kSmall + "-p 4 -n 0 -ctk f32 -o json");
  ASSERT_EQ(k_only.exit_code, 0) << k_only.err;
  EXPECT_EQ(nlohmann::json::parse(k_only.out)[0]["type_v"], "f32");
  auto differ = bench(kSmall + "-ctk f16 -ctv q8_0");
  EXPECT_EQ(differ.exit_code, 1);
  EXPECT_NE(differ.err.find("-ctv q8_0 differs from f16: llmpack's KV cache holds keys and values in one element "
                            "type"),
            std::string::npos)
      << differ.err;
  EXPECT_TRUE(differ.out.empty()) << differ.out;
}

// Without -t, one thread per performance core (core/cpu_topology.h), said in
// a note; with -t, no note.
TEST(BenchLlamaFlags, DefaultThreadsAreNamed) {
  const std::string no_t = " --synthetic stories110m:q4_0 --synthetic_layers 1 --synthetic_vocab 512 -r 1 ";
  auto r = bench(no_t + "-p 4 -n 0 -o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const int threads = nlohmann::json::parse(r.out)[0]["n_threads"].get<int>();
  EXPECT_GE(threads, 1);
  EXPECT_NE(r.err.find("threads: " + std::to_string(threads) + " (the default: one per physical performance core"),
            std::string::npos)
      << r.err;
  auto given = bench(kSmall + "-p 4 -n 0 -o json");
  ASSERT_EQ(given.exit_code, 0) << given.err;
  EXPECT_EQ(given.err.find("the default: one per"), std::string::npos) << given.err;
}

// -ngl, pasted from llama-bench commands: accepted, with a notice when it
// asks for GPU layers; the records say none ran there.
TEST(BenchLlamaFlags, GpuLayersAreAcceptedWithANotice) {
  auto r = bench(kSmall + "-p 4 -n 0 -ngl 99 -o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("-ngl 99: llmpack has no GPU path yet; every layer runs on the CPU"), std::string::npos)
      << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)[0]["n_gpu_layers"], 0);
  auto zero = bench(kSmall + "-p 4 -n 0 -ngl 0 -o json");
  ASSERT_EQ(zero.exit_code, 0) << zero.err;
  EXPECT_EQ(zero.err.find("-ngl"), std::string::npos) << zero.err;
}

TEST(BenchLlamaFlags, ProgressSaysEachRepetitionOnStderr) {
  auto r = bench("--synthetic stories110m:q4_0 --synthetic_layers 1 --synthetic_vocab 512 -t 2 -r 2 -p 4 -n 2 "
                 "-d 8 --progress -o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* line : {"llmpack bench: stories110m (synthetic), 2 threads: filling 8 tokens of context\n",
                           "llmpack bench: stories110m (synthetic) pp4 @ d8, 2 threads: repetition 1/2\n",
                           "llmpack bench: stories110m (synthetic) pp4 @ d8, 2 threads: repetition 2/2\n",
                           "llmpack bench: stories110m (synthetic) tg2 @ d8, 2 threads: repetition 2/2\n"})
    EXPECT_NE(r.err.find(line), std::string::npos) << line << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).size(), 2u);  // stdout still parses
  auto quiet = bench(kSmall + "-p 4 -n 0 -o json");
  EXPECT_EQ(quiet.err.find("repetition"), std::string::npos) << quiet.err;
}

// build_commit is the commit `llmpack --version` names (a hash from git, or
// "unknown" outside a checkout), build_number a count of commits.
TEST(BenchLlamaFlags, BuildFieldsNameTheBuild) {
  auto version = llmpack::testing::run_llmpack("--version");
  ASSERT_EQ(version.exit_code, 0);
  const size_t at = version.out.find("(commit ");
  ASSERT_NE(at, std::string::npos) << version.out;
  const std::string commit = version.out.substr(at + 8, version.out.find(')', at) - at - 8);
  EXPECT_FALSE(commit.empty());
  auto r = bench(kSmall + "-p 4 -n 0 -o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rec = nlohmann::json::parse(r.out)[0];
  EXPECT_EQ(rec["build_commit"], commit);
  EXPECT_TRUE(rec["build_number"].is_number_integer());
  EXPECT_GE(rec["build_number"].get<int64_t>(), commit == "unknown" ? 0 : 1);
  // and the notes say it as llama-bench ends its table
  EXPECT_NE(r.err.find("build: " + commit + " (" + std::to_string(rec["build_number"].get<int64_t>()) + ")\n"),
            std::string::npos)
      << r.err;
}

TEST(BenchLlamaFlags, BadListsAndPairsGiveOneLine) {
  struct Case { std::string args; int code; std::string says; };
  const Case cases[] = {
      {"-p 5-1", 2, "-p: '5-1': the range ends before it begins"},
      {"-p 1-8*1", 2, "-p: '1-8*1': the factor must be at least 2"},
      {"-n 1-8+0", 2, "-n: '1-8+0': the step must be at least 1"},
      {"-p 4x", 2, "-p: '4x': expected a number or a range FIRST-LAST, FIRST-LAST+STEP or FIRST-LAST*FACTOR"},
      {"-p 1-2000", 2, "-p: '1-2000': the list holds more than 1000 values"},
      {"-t 0-2", 2, "-t: '0-2': 0 is outside 1 to 1024"},
      {"-ub 0", 2, "-ub: '0': 0 is outside 1 to 1048576"},
      {"-b 0", 2, "-b: '0': 0 is outside 1 to 1048576"},
      {"-pg 8", 2, "-pg: expected PROMPT,GEN (two token counts, such as 512,128), got '8'"},
      {"-pg 0,4", 2, "-pg: both token counts must be from 1 to 1048576, got '0,4'"},
      {"-ctk f8", 1, "-ctk: KV cache dtype 'f8' is unknown"},
      {"-p 0 -n 0", 1, "nothing to measure: -p and -n are all 0 and no -pg or --ttft was given"},
      // llama-bench's flags that have no counterpart here: named, with the reason
      {"-fa off", 2, "-fa: 'off': llmpack's attention is always one fused kernel over the KV cache"},
      {"-fa 1,0", 2, "-fa: '0': llmpack's attention is always one fused kernel"},
      {"-mmp=0", 2, "-mmp: '0': llmpack always maps the model file"},
      {"-lm dio", 2, "-lm: 'dio': llmpack always maps the model file"},
      {"-oe xml", 2, "--output-err: xml not in {md,csv,json,jsonl,sql,none}"},
      {"--numa mirror", 2, "--numa: expected distribute, isolate or numactl, got 'mirror'"},
      {"--numa distribute -C 0x1", 2, "--cpu-mask excludes --numa"},
      {"-C 0xg", 2, "-C: a CPU mask is hexadecimal digits (0x5: CPUs 0 and 2), got '0xg'"},
      {"-C 0x" + std::string(300, '1'), 2, "CPUs are numbered below"},
      {"-C 0x1" + std::string(200, '0'), 1, "-C 0x1" + std::string(200, '0') + ": CPU 800 is not among those"},
      {"--cpu-strict 2", 2, "--cpu-strict: '2': 2 is outside 0 to 1"},
      {"--poll 101", 2, "--poll: '101': 101 is outside 0 to 100"},
      {"--prio 3", 2, "--prio: 3 (realtime) is refused"},
      {"--prio 7", 2, "--prio: expected -1 (low), 0 (normal), 1 (medium) or 2 (high), got 7"},
      {"-sm none", 2, "-sm is a llama-bench flag that llmpack bench does not take: llmpack has no GPU path yet"},
  };
  for (const auto& c : cases) {
    auto r = bench(kSmall + c.args);
    EXPECT_EQ(r.exit_code, c.code) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.args << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << c.args << ": " << r.out;
  }
}

}  // namespace bench_llama_flags
