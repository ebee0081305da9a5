// The program contract (P3-P6) on tiny random packages built in memory.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "common/tiny_model.h"
#include "kernels/kernels.h"
#include "unit/kernels/test_util.h"
#include "unit/engine/alloc_counter.h"

namespace llmpack {
namespace {

using testing::TinyContract;
using testing::TinyModelSpec;

LoadedPackage load(const TinyModelSpec& spec, ProgramOptions options = {}) {
  options.cpu_threads = 2;
  auto loaded = testing::load_tiny_package(spec, options);
  EXPECT_TRUE(loaded.ok()) << loaded.status().message();
  return std::move(loaded).value();
}

TinyModelSpec with_contract(int64_t s, int64_t c, int64_t b, bool dynamic = true, std::string kv = "off_graph") {
  TinyModelSpec spec;
  spec.contract = TinyContract{s, c, b, dynamic, std::move(kv)};
  return spec;
}

TEST(Program, P3_ExposesForwardAndEveryConstantMethod) {
  auto pkg = load(with_contract(16, 64, 16));
  auto names = pkg.program->method_names();
  for (const char* m : {"forward", "get_max_seq_len", "get_max_context_len", "enable_dynamic_shape",
                        "use_kv_cache", "use_sdpa_with_kv_cache", "get_vocab_size", "get_bos_id",
                        "get_eos_ids", "get_n_layers"})
    EXPECT_NE(std::find(names.begin(), names.end(), m), names.end()) << m;
  EXPECT_EQ(get_int_constant(*pkg.program, "get_max_seq_len").value(), 16);
  EXPECT_EQ(get_int_constant(*pkg.program, "get_max_context_len").value(), 64);
  EXPECT_EQ(get_int_constant(*pkg.program, "get_vocab_size").value(), 300);
  EXPECT_EQ(get_int_constant(*pkg.program, "get_bos_id").value(), 1);
  EXPECT_EQ(get_int_constant(*pkg.program, "get_n_layers").value(), 2);
  EXPECT_TRUE(get_bool_constant(*pkg.program, "use_kv_cache").value());
  auto eos = pkg.program->execute_constant("get_eos_ids");
  ASSERT_TRUE(eos.ok());
  EXPECT_EQ(std::get<std::vector<int64_t>>(eos.value()), std::vector<int64_t>{2});
  EXPECT_FALSE(pkg.program->execute_constant("get_nothing").ok());
}

TEST(Program, P4_MethodMetaReportsTheTokenBoundAndItsKind) {
  auto dynamic = load(with_contract(16, 64, 15));
  auto meta = dynamic.program->method_meta("forward");
  ASSERT_TRUE(meta.ok());
  ASSERT_EQ(meta->num_inputs(), 2u);
  EXPECT_EQ(meta->inputs[0].sizes, (std::vector<int64_t>{1, 15}));
  EXPECT_TRUE(meta->inputs[0].dynamic_dim1);
  EXPECT_EQ(meta->inputs[0].dtype, ScalarType::kInt64);
  auto fixed = load(with_contract(16, 64, 4, /*dynamic=*/false));
  auto fixed_meta = fixed.program->method_meta("forward");
  EXPECT_EQ(fixed_meta->inputs[0].sizes[1], 4);
  EXPECT_FALSE(fixed_meta->inputs[0].dynamic_dim1);
}

TEST(Program, P2_PlainGgufGetsTheDocumentedDefaults) {
  TinyModelSpec spec;  // no llmpack.* keys
  spec.context_length = 100;
  auto pkg = load(spec);
  EXPECT_EQ(get_int_constant(*pkg.program, "get_max_context_len").value(), 100);
  EXPECT_EQ(get_int_constant(*pkg.program, "get_max_seq_len").value(), 100);  // min(512, C)
  EXPECT_EQ(pkg.program->method_meta("forward")->inputs[0].sizes[1], 100);
  EXPECT_TRUE(get_bool_constant(*pkg.program, "enable_dynamic_shape").value());
  ProgramOptions capped;
  capped.defaults.max_seq_len = 32;
  capped.defaults.max_context_len = 64;
  auto small = load(spec, capped);
  EXPECT_EQ(get_int_constant(*small.program, "get_max_seq_len").value(), 32);
  EXPECT_EQ(get_int_constant(*small.program, "get_max_context_len").value(), 64);
}

TEST(Program, P5_RefusesInputBeyondTheBoundNamingBothNumbersAndKeepsState) {
  auto pkg = load(with_contract(16, 64, 8));
  std::vector<int64_t> prompt = {1, 300 - 1, 5, 9};
  auto first = pkg.program->forward(prompt, 0);
  ASSERT_TRUE(first.ok());
  std::vector<int64_t> too_long(9, 7);
  auto refused = pkg.program->forward(too_long, 4);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("token input of 9 exceeds its bound of 8"), std::string::npos)
      << refused.status().message();
  // The refused call touched nothing: continuing gives the same logits as a
  // fresh program fed the same tokens.
  std::vector<int64_t> next = {42};
  auto continued = pkg.program->forward(next, 4);
  ASSERT_TRUE(continued.ok());
  std::vector<float> got(continued->last().begin(), continued->last().end());
  auto fresh = load(with_contract(16, 64, 8));
  ASSERT_TRUE(fresh.program->forward(prompt, 0).ok());
  auto expected = fresh.program->forward(next, 4);
  ASSERT_TRUE(expected.ok());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], expected->last()[i]);
}

TEST(Program, P5_StaticShapeRefusesAnyOtherLength) {
  auto pkg = load(with_contract(16, 64, 4, /*dynamic=*/false));
  std::vector<int64_t> three = {1, 2, 3};
  auto refused = pkg.program->forward(three, 0);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("3 does not match its static size of 4"), std::string::npos);
  std::vector<int64_t> four = {1, 2, 3, 4};
  EXPECT_TRUE(pkg.program->forward(four, 0).ok());
}

TEST(Program, P5_RefusesBadPositionsAndTokenIds) {
  auto pkg = load(with_contract(16, 32, 16));
  std::vector<int64_t> bad_id = {1, 300};
  auto r1 = pkg.program->forward(bad_id, 0);
  ASSERT_FALSE(r1.ok());
  EXPECT_NE(r1.status().message().find("token id 300"), std::string::npos);
  std::vector<int64_t> two = {1, 2};
  auto r2 = pkg.program->forward(two, 31);
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.status().message().find("exceed the context of 32"), std::string::npos);
  EXPECT_FALSE(pkg.program->forward(two, -1).ok());
  EXPECT_FALSE(pkg.program->forward(std::span<const int64_t>(), 0).ok());
}

TEST(Program, P5_PackageWithoutKvCacheOnlyStartsAtZero) {
  auto pkg = load(with_contract(16, 16, 16, true, "none"));
  std::vector<int64_t> seq = {1, 5, 6};
  EXPECT_TRUE(pkg.program->forward(seq, 0).ok());
  auto refused = pkg.program->forward(seq, 3);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("without KV cache"), std::string::npos);
}

TEST(Program, P6_ForwardMakesNoHeapAllocation) {
  auto pkg = load(with_contract(16, 64, 16));
  std::vector<int64_t> chunk = {1, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130, 140, 150, 160};
  ASSERT_TRUE(pkg.program->forward(chunk, 0).ok());  // first call warms nothing up: still counted below
  std::vector<int64_t> one = {7};
  testing::AllocationCounter counter;
  auto a = pkg.program->forward(chunk, 16);
  auto b = pkg.program->forward(one, 32);
  const int64_t allocations = counter.count();
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(allocations, 0);
}

TEST(Program, P6_CounterSeesAllocations) {  // the hook itself works
  testing::AllocationCounter counter;
  auto* p = new std::vector<int>(100);
  const int64_t seen = counter.count();
  delete p;
  EXPECT_GE(seen, 2);
}

TEST(Program, P6_CounterSeesZeroedBuffers) {  // the KV cache and activations come from ZeroPageAllocator
  testing::AllocationCounter counter;
  ZeroedVector<float> v(100);
  EXPECT_EQ(counter.count(), 1);
}

// Resident pages of this process (/proc/self/statm), in bytes; -1 without it.
int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t total = 0, resident = -1;
  statm >> total >> resident;
  return resident < 0 ? -1 : resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

// The activation buffers are sized for the largest chunk at load, and loading
// does not write them: a program whose chunk buffers take 256 MiB and more (B =
// 16384 tokens of a 2048-wide FFN, two of them) adds little to RSS when it is
// created, and a short prompt only the pages it uses. (Sanitizer allocators
// may fill what they allocate, so those builds skip the RSS checks.)
TEST(Program, LoadingLeavesTheChunkBuffersUnwritten) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "sanitizer allocators may write what they allocate";
#endif
  if (resident_bytes() < 0) GTEST_SKIP() << "no /proc/self/statm here";
  TinyModelSpec spec = with_contract(16384, 16384, 16384);
  spec.hidden_dim = 2048;
  spec.context_length = 16384;
  const int64_t chunk_buffer_bytes = 2 * spec.contract->token_bound * spec.hidden_dim * int64_t{sizeof(float)};
  ASSERT_GE(chunk_buffer_bytes, int64_t{256} << 20);
  const int64_t before = resident_bytes();
  auto pkg = load(spec);
  ASSERT_NE(pkg.program, nullptr);
  const int64_t loaded = resident_bytes();
  EXPECT_LT(loaded - before, int64_t{48} << 20) << "loading made " << (loaded - before) << " bytes resident";
  std::vector<int64_t> prompt = {1, 20, 30, 40, 50, 60, 70, 80};
  ASSERT_TRUE(pkg.program->forward(prompt, 0).ok());
  const int64_t prefilled = resident_bytes();
  EXPECT_LT(prefilled - before, int64_t{64} << 20) << "an 8-token prompt made " << (prefilled - before)
                                                   << " bytes resident";
}

TEST(Program, D1_StaticChunkPaddingDoesNotChangeLogits) {
  auto dynamic = load(with_contract(16, 64, 16));
  auto fixed = load(with_contract(16, 64, 4, /*dynamic=*/false));
  std::vector<int64_t> prompt = {1, 77, 78, 79, 80, 81};  // 4 + 2 (padded to 4)
  auto d = dynamic.program->forward(prompt, 0);
  ASSERT_TRUE(d.ok());
  std::vector<float> expected(d->last().begin(), d->last().end());
  ASSERT_TRUE(fixed.program->forward(std::span(prompt).first(4), 0).ok());
  std::vector<int64_t> padded = {80, 81, 81, 81};
  auto f = fixed.program->forward(padded, 4, false, 2);
  ASSERT_TRUE(f.ok());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(f->last()[i], expected[i], 1e-4f);
}

}  // namespace
}  // namespace llmpack

namespace llmpack {
namespace {

// Bad input of issue 3: contradictory contract keys are refused at load,
// naming the keys.
TEST(ProgramContract, ContradictoryKeysAreRefusedNamingThem) {
  struct Case {
    testing::TinyContract contract;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {{16, 64, 0, true, "off_graph"}, "llmpack.forward.token_bound must be positive, found 0"},
      {{32, 16, 16, true, "off_graph"}, "llmpack.max_context_len (16) is below llmpack.max_seq_len (32)"},
      {{16, 64, 16, true, "sideways"}, "llmpack.kv_cache is 'sideways', expected in_graph, off_graph or none"},
      {{16, 64, 128, true, "off_graph"}, "llmpack.forward.token_bound (128) exceeds llmpack.max_context_len (64)"},
  };
  for (const auto& c : cases) {
    testing::TinyModelSpec spec;
    spec.contract = c.contract;
    auto loaded = testing::load_tiny_package(spec);
    ASSERT_FALSE(loaded.ok()) << c.expected;
    EXPECT_NE(loaded.status().message().find(c.expected), std::string::npos) << loaded.status().message();
  }
}

// A matrix of a GGUF type no kernel takes (Q8_1, Q8_K: types of ggml's
// intermediate activations, not of weights) is refused at load
// with the tensor's name, shape and type, and the types that are taken; a
// Q5_0 matrix (llama.cpp's fallback in Q4_K_M files) and the low-bit types
// of Q2_K / Q3_K_* / IQ4_* files load and run.
TEST(Program, MatricesOfTypesNoKernelTakesAreRefusedByName) {
  for (DType bad : {DType::kQ8_1, DType::kQ8_K}) {
    testing::TinyModelSpec spec;
    spec.dim = 256, spec.hidden_dim = 256, spec.n_heads = 4;
    spec.raw_types["blk.1.attn_k.weight"] = bad;
    auto loaded = testing::load_tiny_package(spec);
    ASSERT_FALSE(loaded.ok()) << dtype_name(bad);
    const std::string& m = loaded.status().message();
    EXPECT_NE(m.find("blk.1.attn_k.weight"), std::string::npos) << m;
    EXPECT_NE(m.find("[256, 128]"), std::string::npos) << m;
    EXPECT_NE(m.find(std::string(dtype_name(bad))), std::string::npos) << m;
    EXPECT_NE(m.find("q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl and iq4_xs"), std::string::npos) << m;
  }
  for (DType good : {DType::kQ5_0, DType::kQ2_K, DType::kQ3_K, DType::kIQ4_NL, DType::kIQ4_XS}) {
    testing::TinyModelSpec spec;
    spec.dim = 256, spec.hidden_dim = 256, spec.n_heads = 4;
    spec.raw_types["blk.1.attn_k.weight"] = good;
    auto loaded = testing::load_tiny_package(spec);
    ASSERT_TRUE(loaded.ok()) << dtype_name(good) << ": " << loaded.status().message();
    const std::vector<int64_t> tokens = {1, 5, 9};
    EXPECT_TRUE(loaded->program->forward(tokens, 0).ok()) << dtype_name(good);
  }
}

// On the x86 paths a Q5_0 package's matrices are regrouped at load
// (kernels::load_layout) and the forward gives the logits of the file's
// layout: prefill (the packed kernels ungroup each panel) to the bit, decode
// (its own grouped kernel, another order of float sums) to float rounding.
// Rows of 288 and 352 columns: one group and 1 or 3 plain blocks after it.
TEST(Program, Q5MatricesRegroupedAtLoadGiveTheLogitsOfTheFileLayout) {
  kernels::testing::PathGuard guard;
  TinyModelSpec spec;
  spec.dim = 288, spec.hidden_dim = 352, spec.n_heads = 4, spec.dtype = DType::kQ5_0;
  const std::vector<int64_t> prompt = {1, 40, 41, 300 - 1, 7, 8, 9}, next = {12, 13};
  for (kernels::KernelPath path : kernels::testing::simd_paths()) {
    ASSERT_TRUE(kernels::set_kernel_path(path));
    kernels::set_avx512_decode(kernels::Avx512Decode::kOff);  // the AVX-512 path regroups when it decodes on AVX2
    const bool x86 = path == kernels::KernelPath::kAvx2 || path == kernels::KernelPath::kAvx512 ||
                     path == kernels::KernelPath::kAvxVnni;
    std::vector<float> logits[2];
    uint64_t fingerprint[2] = {};
    for (bool regroup : {false, true}) {
      kernels::set_regroup_at_load(regroup);
      ProgramOptions options;
      options.logits_rows = static_cast<int64_t>(prompt.size());
      // An f32 cache: in an f16 one, decode's float-rounding difference in a
      // k or v value can cross an f16 rounding step, and the next step's logits
      // then differ by far more than the layouts do (seen: 0.044 against 4e-6).
      options.kv_dtype = KvDtype::kF32;
      LoadedPackage pkg = load(spec, options);
      kernels::set_regroup_at_load(true);
      const LayerWeights& l = pkg.program->model().weights().layers[1];
      EXPECT_EQ(l.w_down.dtype, regroup && x86 ? DType::kQ5_0x8 : DType::kQ5_0) << kernel_path_name(path);
      EXPECT_EQ(pkg.program->model().weights().token_embedding.dtype, l.wq.dtype);
      // regrouped in place: the package's view reports the memory-only type
      EXPECT_EQ(pkg.program->model().gguf()->find_tensor("blk.1.ffn_down.weight")->dtype, l.w_down.dtype);
      fingerprint[regroup] = pkg.program->model_fingerprint();
      auto& out = logits[regroup];
      auto pre = pkg.program->forward(prompt, 0, true);
      ASSERT_TRUE(pre.ok()) << pre.status().message();
      ASSERT_EQ(pre->rows, static_cast<int64_t>(prompt.size()));
      out.assign(pre->data, pre->data + pre->rows * pre->vocab_size);
      for (size_t i = 0; i < next.size(); ++i) {
        auto step = pkg.program->forward(std::span(next).subspan(i, 1), static_cast<int64_t>(prompt.size() + i));
        ASSERT_TRUE(step.ok()) << step.status().message();
        const auto last = step->last();
        out.insert(out.end(), last.begin(), last.end());
      }
    }
    EXPECT_EQ(fingerprint[0], fingerprint[1]) << "a saved session must load whichever path loaded the model";
    ASSERT_EQ(logits[0].size(), logits[1].size());
    const size_t prefill = prompt.size() * 300;
    float scale = 0.0f;
    for (float v : logits[0]) scale = std::max(scale, std::fabs(v));
    for (size_t i = 0; i < logits[0].size(); ++i) {
      if (i < prefill)
        ASSERT_EQ(logits[0][i], logits[1][i]) << kernel_path_name(path) << " prefill logit " << i;
      else
        ASSERT_NEAR(logits[0][i], logits[1][i], 2e-5f * scale) << kernel_path_name(path) << " decode logit " << i;
    }
  }
}

// S > B is served (the runner chunks by B and warns, R1), not refused.
TEST(ProgramContract, PublishedSeqLenAboveTheBoundIsServed) {
  testing::TinyModelSpec spec;
  spec.contract = testing::TinyContract{16, 64, 15, true, "off_graph"};
  auto loaded = testing::load_tiny_package(spec);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(get_int_constant(*loaded->program, "get_max_seq_len").value(), 16);
  EXPECT_EQ(loaded->program->method_meta("forward")->inputs[0].sizes[1], 15);
}

}  // namespace
}  // namespace llmpack
