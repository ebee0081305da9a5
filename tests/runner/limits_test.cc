// Reading a package's limits only through Program (CONTRACT P3, P4) and the
// errors a malformed program gives at load (G8).
#include <gtest/gtest.h>

#include "runner/forwarder.h"
#include "runner/harness.h"

namespace llmpack::testing {
namespace {

// A program with a configurable set of methods and a forward meta.
class MinimalProgram : public Program {
 public:
  std::vector<std::string> names = {"forward", "get_max_seq_len"};
  std::vector<int64_t> forward_sizes = {1, 64};
  bool dynamic = true;
  ConstantValue seq_len = int64_t{64};

  std::vector<std::string> method_names() const override { return names; }
  Result<MethodMeta> method_meta(std::string_view) const override {
    MethodMeta m;
    m.inputs.push_back({ScalarType::kInt64, forward_sizes, dynamic});
    return m;
  }
  Result<ConstantValue> execute_constant(std::string_view name) const override {
    if (name == "get_max_seq_len") return seq_len;
    return error_status("absent");
  }
  Result<LogitsView> forward(std::span<const int64_t>, int64_t, bool, int64_t) override {
    return error_status("not used");
  }
  void reset_cache() override {}
};

TEST(Limits, P4_DefaultsWhenOptionalConstantsAreAbsent) {
  MinimalProgram p;
  auto l = read_model_limits(p);
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->max_seq_len, 64);
  EXPECT_EQ(l->max_context_len, 64);  // C defaults to S
  EXPECT_EQ(l->token_bound, 64);
  EXPECT_TRUE(l->use_kv_cache);
  EXPECT_TRUE(l->eos_ids.empty());
}

TEST(Limits, G8_MissingForwardIsAnError) {
  MinimalProgram p;
  p.names = {"get_max_seq_len"};
  auto l = read_model_limits(p);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("forward"), std::string::npos);
}

TEST(Limits, G8_MalformedForwardMetaIsAnError) {
  MinimalProgram p;
  p.forward_sizes = {64};
  auto l = read_model_limits(p);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("rank 1"), std::string::npos) << l.status().message();
  p.forward_sizes = {1, 0};
  EXPECT_FALSE(read_model_limits(p).ok());
}

TEST(Limits, G8_WrongConstantTypeIsAnError) {
  MinimalProgram p;
  p.seq_len = std::vector<int64_t>{1, 2};
  auto l = read_model_limits(p);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("get_max_seq_len"), std::string::npos) << l.status().message();
}

TEST(Limits, G8_RunnerLoadReportsProgramErrors) {
  auto program = std::make_unique<MinimalProgram>();
  program->names = {"get_max_seq_len"};
  TextLLMRunner runner(std::move(program), std::make_unique<FakeTokenizer>());
  Status s = runner.load();
  ASSERT_FALSE(s.ok());
  EXPECT_FALSE(runner.is_loaded());
  GenerationConfig c;
  EXPECT_FALSE(runner.generate("hi", c).ok());
}

TEST(Limits, G8_NullProgramIsAnErrorNotACrash) {
  TextLLMRunner runner(nullptr, std::make_unique<FakeTokenizer>());
  Status s = runner.load();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("null"), std::string::npos);
  runner.reset();
}

TEST(Limits, D2_ContextLenForNoKvCacheIsBoundPlusOne) {
  ModelLimits l;
  l.max_seq_len = 128;
  l.max_context_len = 512;
  l.token_bound = 128;
  l.use_kv_cache = false;
  EXPECT_EQ(l.context_len(), 129);
  l.use_kv_cache = true;
  EXPECT_EQ(l.context_len(), 512);
  l.token_bound = 127;
  EXPECT_EQ(l.prefill_chunk(), 127);
  l.dynamic_shape = false;
  EXPECT_EQ(l.prefill_chunk(), 127);
}

TEST(Limits, R5_NoKvCacheBudgetStopsAtTheTokenBound) {
  Harness h(no_kv(128, 512));
  GenerationConfig c = greedy(-1);
  c.num_bos = 0;
  ASSERT_TRUE(h.generate(prompt_of(10), c).ok());
  EXPECT_EQ(h.pieces.size(), 119u);  // min(C, B + 1) - P
  EXPECT_EQ(h.program->calls.back().tokens.size(), 128u);  // the whole sequence, at the bound
}

}  // namespace
}  // namespace llmpack::testing
