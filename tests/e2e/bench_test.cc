// `llmpack bench` as a user runs it: llama-bench's flags and output fields,
// on synthetic models cut to one layer and a small vocabulary (hidden test
// flags) so it stays fast under ASan; widths are the real stories110M ones.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/cli_runner.h"
#include "common/fixtures.h"
#include "kernels/kernels.h"

namespace {

using Outcome = llmpack::testing::CliOutcome;
using llmpack::testing::slurp;

Outcome bench(const std::string& args) { return llmpack::testing::run_llmpack("bench " + args); }

const std::string kSmall = " --synthetic_layers 1 --synthetic_vocab 512 -t 2 -r 2 ";

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string f; std::getline(in, f, sep);) out.push_back(f);
  return out;
}

// llama-bench's JSON fields, in its order (llmpack's own fall between; its
// newest versions add more, such as n_cpu_moe and repack, not written here),
// the GPU ones holding what its CPU-only builds write, so a script that reads
// any of them by name reads ours.
TEST(Bench, RecordsHoldLlamaBenchsFieldsInItsOrder) {
  auto r = bench("--synthetic stories110m:q4_0 -p 4 -n 0" + kSmall + "-o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rec = nlohmann::ordered_json::parse(r.out).at(0);
  // llama-bench b4000's order, and 0.7.0's (Debian sid, 2026), which drops
  // use_mmap for load_mode and adds the later fields: llmpack writes both.
  const std::vector<std::vector<std::string>> orders = {
      {"build_commit", "build_number", "cpu_info", "gpu_info", "backends", "model_filename", "model_type",
       "model_size", "model_n_params", "n_batch", "n_ubatch", "n_threads", "cpu_mask", "cpu_strict", "poll", "type_k",
       "type_v", "n_gpu_layers", "split_mode", "main_gpu", "no_kv_offload", "flash_attn", "tensor_split", "use_mmap",
       "embeddings", "n_prompt", "n_gen", "n_depth", "test_time", "avg_ns", "stddev_ns", "avg_ts", "stddev_ts"},
      {"build_commit", "build_number", "cpu_info", "gpu_info", "backends", "model_filename", "model_type",
       "model_size", "model_n_params", "n_batch", "n_ubatch", "n_threads", "cpu_mask", "cpu_strict", "poll", "type_k",
       "type_v", "n_gpu_layers", "n_cpu_moe", "split_mode", "main_gpu", "no_kv_offload", "flash_attn", "devices",
       "tensor_split", "tensor_buft_overrides", "load_mode", "lazy_mode", "embeddings", "no_op_offload", "no_host",
       "repack", "fit_target", "fit_min_ctx", "n_prompt", "n_gen", "n_depth", "test_time", "avg_ns", "stddev_ns",
       "avg_ts", "stddev_ts", "samples_ns", "samples_ts"},
  };
  for (const auto& llama_bench : orders) {
    size_t next = 0;
    for (const auto& [key, value] : rec.items())
      if (next < llama_bench.size() && key == llama_bench[next]) ++next;
    EXPECT_EQ(next, llama_bench.size()) << "missing or out of order: "
                                        << llama_bench[std::min(next, llama_bench.size() - 1)] << " in " << rec.dump();
  }
  EXPECT_EQ(rec["gpu_info"], "");
  EXPECT_EQ(rec["split_mode"], "layer");
  EXPECT_EQ(rec["main_gpu"], 0);
  EXPECT_EQ(rec["no_kv_offload"], false);
  EXPECT_EQ(rec["tensor_split"], "0.00");
  EXPECT_EQ(rec["use_mmap"], true);
  EXPECT_EQ(rec["embeddings"], false);
  EXPECT_EQ(rec["n_cpu_moe"], 0);
  EXPECT_EQ(rec["devices"], "auto");
  EXPECT_EQ(rec["tensor_buft_overrides"], "none");
  EXPECT_EQ(rec["lazy_mode"], "auto");
  EXPECT_EQ(rec["repack"], false) << "Q4_0 matrices are read as the file has them";
  auto csv = bench("--synthetic stories110m:q4_0 -p 4 -n 0" + kSmall + "-o csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_NE(csv.out.find(",0x0,0,50,f16,f16,0,0,layer,0,0,-1,auto,0.00,none,1,auto,auto,0,0,0,0,0,0,4,0,0,pp4,"),
            std::string::npos)
      << csv.out;
}

// repack says whether load regrouped matrices for the kernels: SmolLM2's rows
// of 576 take Q5_0 where Q4_K_M wants Q4_K, and the AVX2 decode reads Q5_0
// regrouped (model/model.h).
TEST(Bench, RepackSaysWhetherLoadRegroupedTheWeights) {
  if (!llmpack::kernels::cpu_supports(llmpack::kernels::KernelPath::kAvx2))
    GTEST_SKIP() << "the regrouped Q5_0 layout is the AVX2 decode's";
  auto r = bench("--kernel_path avx2 --synthetic smollm2-135m:q4_k_m -p 4 -n 0" + kSmall + "-o json");
  // What load does on the AVX2 path in this build (a scalar-only build
  // refuses the path and regroups nothing).
  const auto before = llmpack::kernels::active_kernel_path();
  const bool avx2 = llmpack::kernels::set_kernel_path(llmpack::kernels::KernelPath::kAvx2);
  const bool regrouped = avx2 && llmpack::kernels::load_layout(llmpack::DType::kQ5_0) != llmpack::DType::kQ5_0;
  llmpack::kernels::set_kernel_path(before);
  if (!avx2) {
    EXPECT_EQ(r.exit_code, 1) << "--kernel_path avx2 in a build without it";
    return;
  }
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(regrouped) << "the AVX2 path regroups Q5_0 at load";
  EXPECT_EQ(nlohmann::json::parse(r.out).at(0)["repack"], regrouped);
}

TEST(Bench, JsonHasLlamaBenchFieldsAndPositiveSpeeds) {
  auto r = bench("--synthetic stories110m:q4_0 -p 16 -n 4" + kSmall + "-o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto json = nlohmann::json::parse(r.out);
  ASSERT_TRUE(json.is_array());
  ASSERT_EQ(json.size(), 2u);  // pp16, tg4
  for (const auto& rec : json) {
    for (const char* key : {"build_commit", "cpu_info", "model_filename", "model_type", "model_size",
                            "model_n_params", "n_batch", "n_threads", "n_prompt", "n_gen", "test_time", "avg_ns",
                            "stddev_ns", "avg_ts", "stddev_ts", "samples_ns", "samples_ts"})
      EXPECT_TRUE(rec.contains(key)) << key;
    EXPECT_GT(rec["avg_ts"].get<double>(), 0.0);
    EXPECT_GT(rec["avg_ns"].get<int64_t>(), 0);
    EXPECT_EQ(rec["n_threads"], 2);
    EXPECT_EQ(rec["samples_ns"].size(), 2u);
    EXPECT_EQ(rec["model_filename"], "synthetic:stories110m:q4_0");
    EXPECT_GT(rec["model_size"].get<uint64_t>(), 0u);
    EXPECT_EQ(rec["type_k"], "f16");  // the default cache, as llama-bench's
    EXPECT_EQ(rec["type_v"], "f16");
  }
  EXPECT_EQ(json[0]["n_prompt"], 16);
  EXPECT_EQ(json[0]["n_gen"], 0);
  EXPECT_EQ(json[0]["test"], "pp16");
  EXPECT_EQ(json[1]["n_prompt"], 0);
  EXPECT_EQ(json[1]["n_gen"], 4);
  EXPECT_EQ(json[1]["n_batch"], 1);
  // 1 layer of stories110M: 4 x 768^2 + 3 x 768 x 2048 weights, a 512 x 768
  // tied embedding, 3 norms of 768.
  EXPECT_EQ(json[0]["model_n_params"].get<uint64_t>(),
            4ull * 768 * 768 + 3ull * 768 * 2048 + 512ull * 768 + 3ull * 768);
  // avg_ts is the mean of the per-repetition speeds.
  const auto ts = json[1]["samples_ts"];
  EXPECT_NEAR(json[1]["avg_ts"].get<double>(), (ts[0].get<double>() + ts[1].get<double>()) / 2, 1e-6);
}

// --kv_dtype (llama-bench's -ctk/-ctv, whose default is f16) runs the tests
// with a cache of that element type bound to the program, and says so.
TEST(Bench, KvDtypeRunsTheTestsWithThatCacheAndReportsIt) {
  for (const std::string dtype : {"f32", "f16", "q8_0"}) {
    auto r = bench("--synthetic stories110m:q8_0 -p 8 -n 2" + kSmall + "--kv_dtype " + dtype + " -o json");
    ASSERT_EQ(r.exit_code, 0) << dtype << ": " << r.err;
    auto json = nlohmann::json::parse(r.out);
    ASSERT_EQ(json.size(), 2u);
    for (const auto& rec : json) {
      EXPECT_EQ(rec["type_k"], dtype);
      EXPECT_EQ(rec["type_v"], dtype);
      EXPECT_GT(rec["avg_ts"].get<double>(), 0.0);
    }
    EXPECT_NE(r.err.find("kv cache: " + dtype + " keys and values"), std::string::npos) << r.err;
  }
}

TEST(Bench, MarkdownTableLikeLlamaBench) {
  auto r = bench("--synthetic stories110m:f16 -p 8,16 -n 2" + kSmall);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("| model | type | size | params | backend | threads | test | t/s |"), std::string::npos)
      << r.out;
  for (const char* test : {"| pp8 |", "| pp16 |", "| tg2 |"}) EXPECT_NE(r.out.find(test), std::string::npos) << test;
  EXPECT_NE(r.out.find("| stories110m (synthetic) | F16 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" ± "), std::string::npos);
}

TEST(Bench, CsvHeaderAndOneRowPerTest) {
  auto r = bench("--synthetic smollm2-135m:q8_0 -p 8 -n 2" + kSmall + "-o csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::stringstream in(r.out);
  std::string header, row;
  std::getline(in, header);
  const auto fields = split(header, ',');
  for (const char* key : {"model_filename", "model_type", "model_size", "model_n_params", "n_threads", "n_prompt",
                          "n_gen", "test_time", "avg_ns", "stddev_ns", "avg_ts", "stddev_ts", "samples_ts"})
    EXPECT_NE(std::find(fields.begin(), fields.end(), key), fields.end()) << key;
  int rows = 0;
  while (std::getline(in, row)) {
    if (row.empty()) continue;
    ++rows;
    EXPECT_EQ(split(row, ',').size(), fields.size()) << row;
  }
  EXPECT_EQ(rows, 2);
}

// llama-bench's -p 0 and -n 0 skip that kind of test.
TEST(Bench, ZeroPromptOrGenerationSkipsThatTest) {
  auto gen_only = bench("--synthetic stories110m:q8_0 -p 0 -n 3" + kSmall + "-o json");
  ASSERT_EQ(gen_only.exit_code, 0) << gen_only.err;
  auto json = nlohmann::json::parse(gen_only.out);
  ASSERT_EQ(json.size(), 1u) << gen_only.out;
  EXPECT_EQ(json[0]["test"], "tg3");
  auto prompt_only = bench("--synthetic stories110m:q8_0 -p 0,6 -n 0" + kSmall + "-o json");
  ASSERT_EQ(prompt_only.exit_code, 0) << prompt_only.err;
  json = nlohmann::json::parse(prompt_only.out);
  ASSERT_EQ(json.size(), 1u) << prompt_only.out;
  EXPECT_EQ(json[0]["test"], "pp6");
}

TEST(Bench, TimeToFirstTokenBatchedAndTokenByToken) {
  auto r = bench("--synthetic qwen3-0.6b:q4_k_m -p 8 -n 0 --ttft 12 --synthetic_layers 1 --synthetic_vocab 512 "
                 "-t 2 -r 1 -o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto json = nlohmann::json::parse(r.out);
  ASSERT_EQ(json.size(), 3u);  // pp8, ttft12 batched, ttft12 one token per call
  EXPECT_EQ(json[1]["test"], "ttft12");
  EXPECT_EQ(json[1]["n_batch"], 12);
  EXPECT_EQ(json[2]["test"], "ttft12");
  EXPECT_EQ(json[2]["n_batch"], 1);
  EXPECT_NE(r.err.find("time to first token of a 12-token prompt"), std::string::npos) << r.err;
}

// --bandwidth measures the read bandwidth once per thread count, then, next
// to each model's tests, the rate its own per-token weights are read at, and
// gives that model's decode bound from it: bound = rate / bytes a token.
// (--bandwidth_mib: sums of 64 MiB instead of 1 GiB, so the test is quick.)
TEST(Bench, BandwidthGivesEachModelItsBound) {
  auto r = bench("--synthetic stories110m:q4_0 --synthetic smollm2-135m:q8_0 -p 4 -n 1" + kSmall +
                 "--bandwidth --bandwidth_mib 64 -o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("memory read bandwidth (sum over 64 MiB), 2 threads: "), std::string::npos) << r.err;
  // each model's size, in the order the models ran (a model has one JSON
  // entry per test)
  std::vector<double> model_mbs;
  for (const auto& entry : nlohmann::json::parse(r.out)) {
    const double mb = entry["model_size"].get<double>() / 1e6;
    if (model_mbs.empty() || model_mbs.back() != mb) model_mbs.push_back(mb);
  }
  ASSERT_EQ(model_mbs.size(), 2u) << r.out;
  int bounds = 0;
  std::stringstream lines(r.err);
  for (std::string line; std::getline(lines, line);) {
    const auto at = line.find(": tg bound ");
    if (at == std::string::npos) continue;
    double tps = 0, gbps = 0, mb = 0, fresh = 0;
    ASSERT_EQ(std::sscanf(line.c_str() + at,
                          ": tg bound %lf t/s (%lf GB/s reading its %lf MB of weights a token, just before; "
                          "64 MiB of fresh memory: %lf GB/s)",
                          &tps, &gbps, &mb, &fresh),
              4)
        << line;
    EXPECT_GT(gbps, 0.1) << line;
    EXPECT_GT(fresh, 0.1) << line;
    // A token reads the layers and the output, not the whole file: less than
    // the model's size (its embedding, tied here, is counted once), and at
    // least half of it for these shapes.
    ASSERT_LT(bounds, 2) << line;
    const double model_mb = model_mbs[bounds];
    EXPECT_LE(mb, model_mb + 0.05) << line;
    EXPECT_GT(mb, 0.5 * model_mb) << line;
    // the line prints each figure to 0.1, so recomputing the bound from them is
    // good to those roundings (large when a sanitizer build reads 2-3 GB/s)
    const double bound = gbps * 1e3 / mb;
    EXPECT_NEAR(tps, bound, bound * (0.05 / gbps + 0.05 / mb) + 0.05) << line;
    ++bounds;
  }
  EXPECT_EQ(bounds, 2) << r.err;
}

// --bandwidth reads the bound again before each tg repetition and gives each
// tg test (not pp) as a share of it: the median, with the range, of one
// figure per repetition. Without --bandwidth there is no such line.
TEST(Bench, BandwidthPairsEachTgRepetitionWithItsBound) {
  const std::string args =
      "--synthetic stories110m:q8_0 -p 4 -n 8,16 --synthetic_layers 1 --synthetic_vocab 512 -t 2 -r 3 ";
  auto r = bench(args + "--bandwidth --bandwidth_mib 64");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> tests;
  std::stringstream lines(r.out + r.err);
  for (std::string line; std::getline(lines, line);) {
    const auto at = line.find(" of the tg bound read just before each repetition");
    if (at == std::string::npos) continue;
    char test[16] = {};
    int threads = 0, count = 0;
    double median = 0, lo = 0, hi = 0;
    ASSERT_EQ(std::sscanf(line.c_str(),
                          "stories110m (synthetic) %15[^,], %d threads: %lf%% of the tg bound read just before "
                          "each repetition (median of %d; %lf-%lf%%)",
                          test, &threads, &median, &count, &lo, &hi),
              6)
        << line;
    tests.push_back(test);
    EXPECT_EQ(threads, 2) << line;
    EXPECT_EQ(count, 3) << line;  // one figure per repetition
    // shares print to the percent, and a repetition of this tiny model can
    // stall on a busy machine (two of three did in a CI run while other
    // builds held both cores: "0% ... (median of 3; 0-1%)", and all three
    // once locally: "0-0%"), so every figure may read 0: what holds whatever
    // the timing is the order of the figures and their units
    EXPECT_GE(lo, 0.0) << line;
    EXPECT_LE(lo, median) << line;
    EXPECT_LE(median, hi) << line;
    // a share, in percent: decode does not read its weights five times faster
    // than a plain sum of the same bytes (a slip of units would be far off)
    EXPECT_LT(hi, 500.0) << line;
  }
  EXPECT_EQ(tests, (std::vector<std::string>{"tg8", "tg16"})) << r.out << r.err;
  auto plain = bench(args);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ((plain.out + plain.err).find("of the tg bound"), std::string::npos) << plain.out;
  // JSON: each tg record carries the median share as a fraction (the note's
  // percent, rounded); pp records and runs without --bandwidth carry none.
  auto json = bench(args + "--bandwidth --bandwidth_mib 64 -o json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  for (const auto& rec : nlohmann::json::parse(json.out)) {
    const std::string test = rec["test"];
    if (test == "pp4") {
      EXPECT_FALSE(rec.contains("bound_share")) << rec;
      continue;
    }
    ASSERT_TRUE(rec.contains("bound_share")) << rec;
    const double share = rec["bound_share"];
    char said[96];
    std::snprintf(said, sizeof(said), "stories110m (synthetic) %s, 2 threads: %.0f%% of the tg bound", test.c_str(),
                  100.0 * share);
    EXPECT_NE(json.err.find(said), std::string::npos) << said << " in " << json.err;
  }
  auto none = bench(args + "-o json");
  ASSERT_EQ(none.exit_code, 0) << none.err;
  for (const auto& rec : nlohmann::json::parse(none.out)) EXPECT_FALSE(rec.contains("bound_share")) << rec;
}

// --kernel_path runs the tests on the named path and says so (scalar runs on
// every CPU); the JSON's kernel_path field follows it.
TEST(Bench, KernelPathIsChosenAndReported) {
  auto r = bench("--synthetic stories110m:q8_0 -p 8 -n 1" + kSmall + "--kernel_path scalar -o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto json = nlohmann::json::parse(r.out);
  ASSERT_EQ(json.size(), 2u);
  EXPECT_EQ(json[0]["kernel_path"], "scalar");
  EXPECT_NE(r.err.find("kernel path: scalar"), std::string::npos) << r.err;
}

// --kernel_path avx_vnni runs a prefill on the AVX-VNNI path where the CPU has
// it (the same token counts as the avx2 path's, and --peak measures its
// registers: vpdpbusd on 256-bit vectors), or says in one line that it cannot.
TEST(Bench, AvxVnniPathRunsOrSaysWhyNot) {
  auto r = bench("--synthetic stories110m:q8_0 -p 8 -n 1 -o csv --peak" + kSmall + "--kernel_path avx_vnni");
  if (r.exit_code != 0) {
    EXPECT_NE(r.err.find("--kernel_path avx_vnni: this CPU or build cannot run it"), std::string::npos) << r.err;
    GTEST_SKIP() << "no AVX-VNNI path on this CPU or build: " << r.err;
  }
  EXPECT_NE(r.err.find("kernel path: avx_vnni\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("compute peak (avx_vnni registers"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find(",8,0,"), std::string::npos) << r.out;  // the pp8 row
}

// --avx512_decode picks the decode kernels of the avx512 path, and the kernel
// path line says when decode runs the AVX2 ones; other paths ignore it.
TEST(Bench, Avx512DecodeChoiceIsReported) {
  const std::string run = "--synthetic stories110m:q4_0 -p 0 -n 2 -o csv" + kSmall;  // notes on stderr
  auto avx2 = bench(run + "--kernel_path avx2 --avx512_decode off");
  ASSERT_EQ(avx2.exit_code, 0) << avx2.err;
  EXPECT_NE(avx2.err.find("kernel path: avx2\n"), std::string::npos) << avx2.err;
  auto on = bench(run + "--kernel_path avx512 --avx512_decode on");
  if (on.exit_code != 0) GTEST_SKIP() << "no AVX-512 path on this CPU or build: " << on.err;
  EXPECT_NE(on.err.find("kernel path: avx512\n"), std::string::npos) << on.err;
  auto off = bench(run + "--kernel_path avx512 --avx512_decode off");
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_NE(off.err.find("kernel path: avx512 (decode on the avx2 kernels: --avx512_decode off)"), std::string::npos)
      << off.err;
  auto automatic = bench(run + "--kernel_path avx512");
  ASSERT_EQ(automatic.exit_code, 0) << automatic.err;
  const bool split = automatic.err.find("this CPU runs 512-bit vectors as two halves") != std::string::npos;
  const bool whole = automatic.err.find("kernel path: avx512\n") != std::string::npos;
  EXPECT_TRUE(split != whole) << automatic.err;
}

// --float_decode_prefetch sets how far ahead the float decode tiles prefetch,
// and bench says which distance its tests ran with.
TEST(Bench, FloatDecodePrefetchIsReported) {
  const std::string run = "--synthetic stories110m:f16 -p 0 -n 2 -o csv" + kSmall;  // notes on stderr
  auto set = bench(run + "--float_decode_prefetch 2048");
  ASSERT_EQ(set.exit_code, 0) << set.err;
  if (set.err.find("kernel path: scalar") != std::string::npos) GTEST_SKIP() << "scalar path: no prefetch";
  EXPECT_NE(set.err.find("float decode prefetch: 2048 bytes ahead (--float_decode_prefetch)\n"), std::string::npos)
      << set.err;
  auto none = bench(run + "--float_decode_prefetch 0");
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_NE(none.err.find("float decode prefetch: none (--float_decode_prefetch)\n"), std::string::npos) << none.err;
  auto automatic = bench(run);
  ASSERT_EQ(automatic.exit_code, 0) << automatic.err;
  EXPECT_NE(automatic.err.find("float decode prefetch: "), std::string::npos) << automatic.err;
  EXPECT_NE(automatic.err.find(" (this CPU's default)\n"), std::string::npos) << automatic.err;
}

// --peak measures the compute ceilings and relates each pp test to the fp32 one.
TEST(Bench, PeakGivesCeilingsAndPrefillShare) {
  auto r = bench("--synthetic stories110m:q4_0 -p 8 -n 0 --synthetic_layers 1 --synthetic_vocab 512 -t 1 -r 1 --peak");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  if (r.out.find("neither AVX2+FMA nor AVX-512") != std::string::npos) GTEST_SKIP() << "no SIMD on this CPU";
  EXPECT_NE(r.out.find("compute peak ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GFLOP/s, int8 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pp8, 1 thread: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("of the fp32 peak"), std::string::npos) << r.out;
}

// --profile splits each pp and tg test's time over the forward stages; the
// shares printed add up to 100%.
TEST(Bench, ProfileGivesEachTestItsStageShares) {
  auto r = bench("--synthetic stories110m:q8_0 -p 8 -n 2" + kSmall + "--profile");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* test : {"pp8, 2 threads, time per stage:", "tg2, 2 threads, time per stage:"}) {
    const size_t at = r.out.find(test);
    ASSERT_NE(at, std::string::npos) << test << "\n" << r.out;
    const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
    double sum = 0;
    for (const char* stage : {"q/k/v ", "attention ", "attn out ", "ffn gate+up ", "ffn down ", "logits ", "other "}) {
      const size_t s = line.find(stage);
      ASSERT_NE(s, std::string::npos) << stage << " in " << line;
      sum += std::stod(line.substr(s + std::string(stage).size()));
    }
    EXPECT_NEAR(sum, 100.0, 0.5) << line;
    EXPECT_NE(line.find(test[0] == 'p' ? "ms a repetition, in 1 forward call)" : "ms a repetition, in 2 forward calls)"),
              std::string::npos)
        << line;
  }
}

// llama-bench's -d: each depth's tests run after that many tokens of context
// were put in the cache, and are named "tg2 @ d16"; n_depth in JSON and CSV.
TEST(Bench, DepthFillsTheContextFirstAndNamesTestsAsLlamaBench) {
  auto r = bench("--synthetic stories110m:q4_0 -p 8 -n 2 -d 0,16" + kSmall + "-o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto json = nlohmann::json::parse(r.out);
  ASSERT_EQ(json.size(), 4u) << r.out;
  const char* names[] = {"pp8", "tg2", "pp8 @ d16", "tg2 @ d16"};
  const int depths[] = {0, 0, 16, 16};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(json[i]["test"], names[i]);
    EXPECT_EQ(json[i]["n_depth"], depths[i]);
    EXPECT_GT(json[i]["avg_ts"].get<double>(), 0.0);
  }
  auto md = bench("--synthetic stories110m:q4_0 -p 0 -n 2 -d 8" + kSmall);
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("| tg2 @ d8 |"), std::string::npos) << md.out;
  auto csv = bench("--synthetic stories110m:q4_0 -p 0 -n 2 -d 8" + kSmall + "-o csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_NE(csv.out.substr(0, csv.out.find('\n')).find(",n_depth,"), std::string::npos) << csv.out;
}

// The depth is where the tests start: stories260K holds 512 positions, so 4
// tokens after 508 of context fit and after 509 do not. Every depth is
// checked against the cache before any test runs, so a list whose last depth
// does not fit fails at once, with no rows, naming what it needs.
TEST(Bench, DepthRunsTheTestsFromThatPosition) {
  LLMPACK_REQUIRE_FIXTURE(model, "llama2c/stories260K.bin");
  auto fits = bench("-m " + model + " -p 0 -n 4 -d 508 -r 1 -t 1 -o json");
  ASSERT_EQ(fits.exit_code, 0) << fits.err;
  EXPECT_EQ(nlohmann::json::parse(fits.out)[0]["test"], "tg4 @ d508");
  auto over = bench("-m " + model + " -p 0 -n 4 -d 0,509 -r 1 -t 1 -o csv");
  EXPECT_NE(over.exit_code, 0);
  EXPECT_NE(over.err.find("-d 509 followed by a test of 4 tokens needs 513 positions of context, and this "
                          "model's cache holds 512 (get_max_context_len): lower -d, -p, -n or -pg"),
            std::string::npos)
      << over.err;
  EXPECT_EQ(over.out.find("tg4"), std::string::npos) << "no test ran: " << over.out;
  auto prompt = bench("-m " + model + " -p 600 -n 0 -r 1 -t 1");
  EXPECT_NE(prompt.exit_code, 0);
  EXPECT_NE(prompt.err.find("-d 0 followed by a test of 600 tokens needs 600 positions"), std::string::npos)
      << prompt.err;
  auto ttft = bench("-m " + model + " -p 0 -n 1 --ttft 513 -r 1 -t 1");
  EXPECT_NE(ttft.exit_code, 0);
  EXPECT_NE(ttft.err.find("--ttft 513 needs 513 positions of context, and this model's cache holds 512"),
            std::string::npos)
      << ttft.err;
}

TEST(Bench, ModelFileIsLoadedAndTimed) {
  LLMPACK_REQUIRE_FIXTURE(model, "llama2c/stories260K.bin");
  auto r = bench("-m " + model + " -p 16 -n 4 -r 1 -t 1 -o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto json = nlohmann::json::parse(r.out);
  ASSERT_EQ(json.size(), 2u);
  EXPECT_EQ(json[0]["model_filename"], model);
  EXPECT_GE(json[0]["load_time_ms"].get<double>(), 0.0);
  EXPECT_GT(json[1]["avg_ts"].get<double>(), 0.0);
}

TEST(Bench, SavedSyntheticPackageLoadsWithSameSizeAndParams) {
  const std::string path = ::testing::TempDir() + "/llmpack_bench_saved.gguf";
  auto saved = bench("--synthetic stories110m:q4_k_m --synthetic_layers 2 --synthetic_vocab 256 --save " + path);
  ASSERT_EQ(saved.exit_code, 0) << saved.err;
  EXPECT_NE(saved.err.find("wrote " + path), std::string::npos) << saved.err;
  auto synthetic = bench("--synthetic stories110m:q4_k_m --synthetic_layers 2 --synthetic_vocab 256 -p 8 -n 2 -r 1 "
                         "-t 2 -o json");
  auto file = bench("-m " + path + " -p 8 -n 2 -r 1 -t 2 -o json");
  ASSERT_EQ(synthetic.exit_code, 0) << synthetic.err;
  ASSERT_EQ(file.exit_code, 0) << file.err;
  auto a = nlohmann::json::parse(synthetic.out), b = nlohmann::json::parse(file.out);
  EXPECT_EQ(a[0]["model_size"], b[0]["model_size"]);
  EXPECT_EQ(a[0]["model_n_params"], b[0]["model_n_params"]);
  EXPECT_EQ(b[0]["model_filename"], path);
  EXPECT_EQ(b[0]["model_type"].get<std::string>().rfind("llama ", 0), 0u) << b[0]["model_type"];
  // Described as llama-bench describes it, by the file type the package declares.
  EXPECT_EQ(a[0]["model_type"], b[0]["model_type"]);
  const std::string type = b[0]["model_type"].get<std::string>();
  EXPECT_EQ(type.substr(type.size() - 14), " Q4_K - Medium") << type;
  std::remove(path.c_str());
}

// SmolLM2's Q4_K_M holds Q5_0 matrices, which loading regroups in place on
// x86: --save must still write the file's layout, byte for byte what a load
// that did not regroup writes.
TEST(Bench, SavedPackageHoldsThePlainLayoutOfRegroupedMatrices) {
  const std::string a = ::testing::TempDir() + "/llmpack_bench_regrouped.gguf";
  const std::string b = ::testing::TempDir() + "/llmpack_bench_plain.gguf";
  const std::string model = "--synthetic smollm2-135m:q4_k_m --synthetic_layers 2 --synthetic_vocab 256 ";
  ASSERT_EQ(bench(model + "--save " + a).exit_code, 0);
  ASSERT_EQ(bench(model + "--regroup off --save " + b).exit_code, 0);
  std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
  const std::string bytes_a((std::istreambuf_iterator<char>(fa)), std::istreambuf_iterator<char>());
  const std::string bytes_b((std::istreambuf_iterator<char>(fb)), std::istreambuf_iterator<char>());
  EXPECT_GT(bytes_a.size(), 1000000u);
  EXPECT_TRUE(bytes_a == bytes_b) << "sizes " << bytes_a.size() << " and " << bytes_b.size();
  auto run = bench("-m " + a + " -p 8 -n 2 -r 1 -t 2 -o json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(nlohmann::json::parse(run.out)[0]["model_type"].get<std::string>().find("X8"), std::string::npos);
  std::remove(a.c_str());
  std::remove(b.c_str());
}

TEST(Bench, BadFlagsGiveOneLine) {
  struct Case { std::string args; int code; std::string says; };
  const Case cases[] = {
      {"--synthetic gpt-9:q4_0", 1, "unknown synthetic model 'gpt-9'"},
      {"--synthetic stories110m:q3_k", 1, "unknown weight type 'q3_k'"},
      {"--synthetic stories110m", 1, "NAME:TYPE"},
      {"--synthetic stories110m:q4_0 -p -1", 2, "-p"},
      {"--synthetic stories110m:q4_0 -p 0 -n 0", 1, "nothing to measure"},
      {"--synthetic stories110m:q4_0 -t 0", 2, "-t"},
      {"--synthetic stories110m:q4_0 -d -4", 2, "-d"},
      {"--synthetic stories110m:q4_0 -o xml", 2, "xml"},
      {"--synthetic stories110m:q4_0 --regroup maybe", 1, "--regroup: expected on or off, got 'maybe'"},
      {"-p 16", 1, "needs a model"},
      {"-m /nonexistent/model.gguf", 1, "/nonexistent/model.gguf"},
      {"-m /nonexistent/model.gguf --save /tmp/x.gguf", 1, "--save needs a --synthetic model"},
      {"--synthetic stories110m:q4_0 --kernel_path avx9", 1,
       "expected scalar, avx2, avx_vnni, avx512, neon, neon_dotprod or neon_i8mm, got 'avx9'"},
      {"--synthetic stories110m:q4_0 --avx512_decode yes", 1, "--avx512_decode: expected auto, on or off, got 'yes'"},
      {"--synthetic stories110m:q4_0 --float_decode_prefetch -1", 1,
       "--float_decode_prefetch: expected auto or a byte count from 0 to 65536, got '-1'"},
      {"--synthetic stories110m:q4_0 --float_decode_prefetch 1k", 1,
       "--float_decode_prefetch: expected auto or a byte count from 0 to 65536, got '1k'"},
      {"--synthetic stories110m:q4_0 --float_decode_prefetch 70000", 1,
       "--float_decode_prefetch: expected auto or a byte count from 0 to 65536, got '70000'"},
      {"--synthetic stories110m:q4_0 --kv_dtype f8", 1, "--kv_dtype: KV cache dtype 'f8' is unknown, expected f32"},
  };
  for (const auto& c : cases) {
    auto r = bench(c.args);
    EXPECT_EQ(r.exit_code, c.code) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.args << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << c.args << ": " << r.out;
  }
}

}  // namespace
