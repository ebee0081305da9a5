// Issue 3's test matrix on a real model: stories260K exported into every
// package kind, prompts of S - 1, S, S + 1, 2S + 1 and C - 1 tokens through
// generate() and prefill(). Each case checks the exact forward calls (a
// recording wrapper around the program), success or the specified error,
// and chunk invariance (R8) across kinds.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "common/fixtures.h"
#include "common/prompt_builder.h"
#include "engine/llama_program.h"
#include "export/exporter.h"
#include "runner/text_llm_runner.h"

namespace llmpack {
namespace {

struct Call {
  int64_t n_tokens;
  int64_t start_pos;
  int64_t n_valid;
};

// Forwards to the real program, recording every forward call and keeping a
// copy of the last logits.
class RecordingProgram final : public Program {
 public:
  RecordingProgram(std::unique_ptr<Program> inner, std::vector<Call>* calls, std::vector<float>* last)
      : inner_(std::move(inner)), calls_(calls), last_(last) {}
  std::vector<std::string> method_names() const override { return inner_->method_names(); }
  Result<MethodMeta> method_meta(std::string_view m) const override { return inner_->method_meta(m); }
  Result<ConstantValue> execute_constant(std::string_view m) const override { return inner_->execute_constant(m); }
  void reset_cache() override { inner_->reset_cache(); }
  Result<LogitsView> forward(std::span<const int64_t> tokens, int64_t pos, bool all, int64_t n_valid) override {
    calls_->push_back({static_cast<int64_t>(tokens.size()), pos, n_valid < 0 ? int64_t(tokens.size()) : n_valid});
    auto r = inner_->forward(tokens, pos, all, n_valid);
    if (r.ok()) last_->assign(r->last().begin(), r->last().end());
    return r;
  }

 private:
  std::unique_ptr<Program> inner_;
  std::vector<Call>* calls_;
  std::vector<float>* last_;
};

struct Kind {
  const char* label;
  std::string kv_cache = "off_graph";
  bool static_shape = false;
  int64_t static_chunk = 0;
  int64_t token_bound = 0;  // legacy override
};

const std::vector<Kind>& kinds() {
  static const std::vector<Kind> k = {
      {"dynamic"}, {"legacy", "off_graph", false, 0, 127}, {"static1", "off_graph", true, 1},
      {"static32", "off_graph", true, 32}, {"in_graph", "in_graph"}, {"no_kv_cache", "none"}};
  return k;
}

constexpr int64_t kS = 128;

class PrefillKinds : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string bin = testing::fixture_path("llama2c/stories260K.bin");
    if (!std::filesystem::exists(bin)) return;
    dir_ = ::testing::TempDir() + "/prefill_kinds_" + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
    for (const Kind& kind : kinds())
      for (int64_t c : {int64_t{128}, int64_t{512}}) {
        ExportOptions o;
        o.checkpoint = bin;
        o.tokenizer_path = testing::fixture_path("llama2c/tok512.bin");
        o.output = path(kind, c);
        o.max_seq_len = kS;
        o.max_context_len = kind.kv_cache == "none" ? 0 : c;
        o.kv_cache = kind.kv_cache;
        o.static_shape = kind.static_shape;
        o.static_chunk = kind.static_chunk;
        o.token_bound = kind.token_bound;
        auto report = export_package(o);
        ASSERT_TRUE(report.ok()) << kind.label << ": " << report.status().message();
      }
  }
  static void TearDownTestSuite() {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  void SetUp() override {
    if (dir_.empty()) GTEST_SKIP() << "fixture not found: llama2c/stories260K.bin (../shared/fixtures absent)";
  }
  static std::string path(const Kind& kind, int64_t c) {
    return dir_ + "/" + kind.label + "_" + std::to_string(c) + ".gguf";
  }

  struct Run {
    std::vector<Call> calls;
    std::vector<float> logits;
    std::unique_ptr<TextLLMRunner> runner;
    Tokenizer* tokenizer = nullptr;
  };
  Run open(const Kind& kind, int64_t c) {
    Run run;
    ProgramOptions options;
    options.cpu_threads = 2;
    auto pkg = load_package(path(kind, c), "", options);
    EXPECT_TRUE(pkg.ok()) << pkg.status().message();
    run.tokenizer = pkg->tokenizer.get();
    run.runner = std::make_unique<TextLLMRunner>(
        std::make_unique<RecordingProgram>(std::move(pkg->program), &run.calls, &run.logits),
        std::move(pkg->tokenizer));
    EXPECT_TRUE(run.runner->load().ok());
    return run;
  }

  static inline std::string dir_;
};

// The forward calls a prompt of p tokens must produce (R2-R5).
std::vector<Call> expected_prefill(const Kind& kind, int64_t p) {
  std::vector<Call> calls;
  if (kind.kv_cache == "none") return {{p, 0, p}};
  const int64_t chunk = kind.static_shape ? std::max<int64_t>(kind.static_chunk, 1)
                                          : (kind.token_bound ? kind.token_bound : kS);
  for (int64_t pos = 0; pos < p; pos += chunk) {
    const int64_t n = std::min(chunk, p - pos);
    calls.push_back({kind.static_shape ? chunk : n, pos, n});
  }
  return calls;
}

void expect_calls(const std::vector<Call>& got, const std::vector<Call>& want, const std::string& label) {
  ASSERT_EQ(got.size(), want.size()) << label;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].n_tokens, want[i].n_tokens) << label << " call " << i;
    EXPECT_EQ(got[i].start_pos, want[i].start_pos) << label << " call " << i;
    EXPECT_EQ(got[i].n_valid, want[i].n_valid) << label << " call " << i;
  }
}

GenerationConfig greedy(int32_t n) {
  GenerationConfig g;
  g.temperature = 0;
  g.max_new_tokens = n;
  g.echo = false;
  g.ignore_eos = true;
  return g;
}

TEST_F(PrefillKinds, R2_R6_EveryKindEveryPromptLength) {
  for (int64_t c : {int64_t{128}, int64_t{512}}) {
    for (int64_t p : {kS - 1, kS, kS + 1, 2 * kS + 1, c - 1, c}) {
      std::map<std::string, std::vector<float>> logits_by_kind;
      std::map<std::string, std::string> text_by_kind;
      for (const Kind& kind : kinds()) {
        const std::string label = std::string(kind.label) + " C=" + std::to_string(c) + " P=" + std::to_string(p);
        const int64_t ctx = kind.kv_cache == "none" ? kS : c;
        for (bool through_prefill : {false, true}) {
          Run run = open(kind, c);
          const std::string prompt = testing::prompt_of_length(*run.tokenizer, p);
          std::string text;
          Status status = through_prefill ? run.runner->prefill(prompt, greedy(4))
                                          : run.runner->generate(prompt, greedy(4), [&](const std::string& s) { text += s; });
          const bool fits = p <= ctx - 1 && (kind.kv_cache != "none" || p <= kS);
          if (!fits) {
            EXPECT_FALSE(status.ok()) << label;
            EXPECT_TRUE(run.calls.empty()) << label << ": refused only before any call (R5/R6)";
            const std::string& m = status.message();
            if (kind.kv_cache == "none" && p > kS)
              EXPECT_NE(m.find(std::to_string(kS)), std::string::npos) << label << ": " << m;  // R5 names B
            else
              EXPECT_NE(m.find(std::to_string(ctx)), std::string::npos) << label << ": " << m;  // R6 names C
            continue;
          }
          ASSERT_TRUE(status.ok()) << label << ": " << status.message();
          auto want = expected_prefill(kind, p);
          std::vector<Call> prefill_calls(run.calls.begin(), run.calls.begin() + std::min(run.calls.size(), want.size()));
          expect_calls(prefill_calls, want, label + (through_prefill ? " prefill()" : " generate()"));
          if (!through_prefill) {
            text_by_kind[kind.label] = text;
          } else {
            logits_by_kind[kind.label] = run.logits;
          }
        }
      }
      // R8: the same logits after prefill and the same greedy text, whatever the kind.
      const auto& ref = logits_by_kind.begin();
      if (ref == logits_by_kind.end()) continue;
      for (const auto& [label, logits] : logits_by_kind) {
        float scale = 0, diff = 0;
        for (size_t i = 0; i < logits.size(); ++i) {
          scale = std::max(scale, std::abs(ref->second[i]));
          diff = std::max(diff, std::abs(logits[i] - ref->second[i]));
        }
        EXPECT_LT(diff, 1e-3f * scale) << "R8 " << label << " vs " << ref->first << " P=" << p << " C=" << c;
      }
      // Budgets differ (a package without KV cache has C = S), so the shorter
      // greedy text must be a prefix of the longer.
      for (const auto& [label, text] : text_by_kind) {
        const std::string& first = text_by_kind.begin()->second;
        const size_t n = std::min(text.size(), first.size());
        EXPECT_FALSE(text.empty()) << label;
        EXPECT_EQ(text.substr(0, n), first.substr(0, n)) << "R8 greedy " << label << " P=" << p << " C=" << c;
      }
    }
  }
}

TEST_F(PrefillKinds, R2_LegacyPackagePrefillsExactlySTokensInTwoCalls) {
  Run run = open(kinds()[1], 512);
  EXPECT_EQ(run.runner->limits().max_seq_len, 128);
  EXPECT_EQ(run.runner->limits().token_bound, 127);
  ASSERT_TRUE(run.runner->generate(testing::prompt_of_length(*run.tokenizer, 128), greedy(1)).ok());
  ASSERT_GE(run.calls.size(), 2u);
  EXPECT_EQ(run.calls[0].n_tokens, 127);
  EXPECT_EQ(run.calls[1].n_tokens, 1);
  EXPECT_EQ(run.calls[1].start_pos, 127);
}

TEST_F(PrefillKinds, R6_PromptOfCTokensRefusedBeforeAnyCall) {
  Run run = open(kinds()[0], 512);
  auto status = run.runner->generate(testing::prompt_of_length(*run.tokenizer, 512), greedy(1));
  ASSERT_FALSE(status.ok());
  EXPECT_TRUE(run.calls.empty());
  EXPECT_NE(status.message().find("512"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace llmpack
