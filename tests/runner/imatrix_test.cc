// compute_imatrix (runner/imatrix.h) on a tiny random package: the text cut
// into perplexity's windows, every row of each counted, --chunks limiting the
// windows, and the refusals with their numbers.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/tiny_model.h"
#include "engine/activation_stats.h"
#include "runner/imatrix.h"

namespace llmpack {
namespace {

constexpr int64_t kContext = 16;

LoadedPackage load_tiny() {
  ProgramOptions options;
  options.cpu_threads = 2;
  options.logits_rows = kContext;
  auto pkg = testing::load_tiny_package(testing::TinyModelSpec{}, options);
  EXPECT_TRUE(pkg.ok()) << pkg.status().message();
  return std::move(pkg).value();
}

std::string calibration_text() {
  std::string text;
  for (int i = 0; i < 12; ++i) text += "the quick brown fox jumps over a lazy dog and ";
  return text;
}

std::vector<int64_t> text_ids(const Tokenizer& tokenizer, const std::string& text) {
  auto ids = tokenizer.encode(text, 1, 0);
  EXPECT_TRUE(ids.ok());
  return std::vector<int64_t>(ids->begin(), ids->end());
}

// save_every (--output_frequency): the matrix so far after every N windows
// but the last (the caller writes the final one), each with the rows seen by
// then; an error from the save stops the run with it.
TEST(ImatrixRun, SavesTheMatrixSoFarEveryNWindows) {
  LoadedPackage pkg = load_tiny();
  const std::string text = calibration_text();
  const int64_t windows = static_cast<int64_t>(text_ids(*pkg.tokenizer, text).size()) / kContext;
  ASSERT_GE(windows, 3);
  const ImatrixOptions options{kContext, -1, false, "cal.txt"};
  std::vector<int64_t> saved_chunks;
  ImatrixSaving saving{1, [&](const ImportanceMatrix& m) {
                         saved_chunks.push_back(m.chunk_count);
                         for (const auto& [name, e] : m.entries) EXPECT_EQ(e.count, m.chunk_count * kContext) << name;
                         return ok_status();
                       }};
  auto r = compute_imatrix(*pkg.program, *pkg.tokenizer, text, options, nullptr, saving);
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::vector<int64_t> expected;
  for (int64_t w = 1; w < windows; ++w) expected.push_back(w);
  EXPECT_EQ(saved_chunks, expected);
  saving = {2, [](const ImportanceMatrix&) { return error_status("disk full"); }};
  r = compute_imatrix(*pkg.program, *pkg.tokenizer, text, options, nullptr, saving);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("disk full"), std::string::npos);
}

TEST(ImatrixRun, EveryRowOfEveryWindowIsCounted) {
  LoadedPackage pkg = load_tiny();
  const std::string text = calibration_text();
  const int64_t windows = static_cast<int64_t>(text_ids(*pkg.tokenizer, text).size()) / kContext;
  ASSERT_GE(windows, 3);
  std::vector<double> running;
  auto r = compute_imatrix(*pkg.program, *pkg.tokenizer, text, {kContext, -1, false, "cal.txt"},
                           [&](int64_t w, double ppl) {
                             EXPECT_EQ(w, static_cast<int64_t>(running.size()));
                             running.push_back(ppl);
                           });
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->n_windows, windows);
  EXPECT_EQ(static_cast<int64_t>(running.size()), windows);
  EXPECT_EQ(r->imatrix.chunk_count, windows);
  EXPECT_EQ(r->imatrix.chunk_size, kContext);
  EXPECT_EQ(r->imatrix.datasets, std::vector<std::string>{"cal.txt"});
  EXPECT_EQ(r->imatrix.entries.size(), 7u * 2) << "two layers, no output matrix";
  for (const auto& [name, e] : r->imatrix.entries) EXPECT_EQ(e.count, windows * kContext) << name;
  // llama-perplexity's scored positions: context/2 .. context-2 of each window.
  EXPECT_EQ(r->n_scored, windows * (kContext / 2 - 1));
  EXPECT_TRUE(std::isfinite(r->ppl) && r->ppl > 1.0) << r->ppl;
  EXPECT_EQ(running.back(), r->ppl);
}

// --chunks 2: the first two windows only, and their sums are exactly what
// binding the stats and running those windows (BOS first) by hand gives.
TEST(ImatrixRun, ChunksLimitTheWindowsToTheFirstOnes) {
  LoadedPackage pkg = load_tiny();
  const std::string text = calibration_text();
  auto r = compute_imatrix(*pkg.program, *pkg.tokenizer, text, {kContext, 2, true, ""});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->n_windows, 2);
  EXPECT_EQ(r->imatrix.chunk_count, 2);
  EXPECT_TRUE(r->imatrix.datasets.empty());
  ASSERT_NE(r->imatrix.find("output.weight"), nullptr) << "process_output";
  EXPECT_EQ(r->imatrix.find("output.weight")->count, 2 * kContext) << "every row's logits";

  const std::vector<int64_t> ids = text_ids(*pkg.tokenizer, text);
  ActivationStats by_hand(true);
  ASSERT_TRUE(pkg.program->bind_activation_stats(&by_hand).ok());
  for (int64_t w = 0; w < 2; ++w) {
    std::vector<int64_t> window(ids.begin() + w * kContext, ids.begin() + (w + 1) * kContext);
    window[0] = pkg.tokenizer->bos_id();
    ASSERT_TRUE(pkg.program->forward(window, 0, true).ok());
  }
  ASSERT_TRUE(pkg.program->bind_activation_stats(nullptr).ok());
  const ImportanceMatrix want = by_hand.to_imatrix({}, 2, kContext);
  ASSERT_EQ(r->imatrix.entries.size(), want.entries.size());
  for (const auto& [name, e] : want.entries) {
    ASSERT_NE(r->imatrix.find(name), nullptr) << name;
    EXPECT_EQ(r->imatrix.find(name)->sum_sq, e.sum_sq) << name;
  }
}

// Windows of 2 tokens feed the statistics but score no position.
TEST(ImatrixRun, WindowsOfTwoTokensCountRowsButScoreNone) {
  LoadedPackage pkg = load_tiny();
  auto r = compute_imatrix(*pkg.program, *pkg.tokenizer, "the quick brown fox", {2, 3, false, ""});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->n_windows, 3);
  EXPECT_EQ(r->n_scored, 0);
  for (const auto& [name, e] : r->imatrix.entries) EXPECT_EQ(e.count, 6) << name;
}

TEST(ImatrixRun, ShortTextsAndBadOptionsAreRefusedWithTheirNumbers) {
  LoadedPackage pkg = load_tiny();
  const std::string text = "the fox";
  const int64_t n = static_cast<int64_t>(text_ids(*pkg.tokenizer, text).size());
  auto short_text = compute_imatrix(*pkg.program, *pkg.tokenizer, text, {kContext, -1, false, ""});
  ASSERT_FALSE(short_text.ok());
  EXPECT_NE(short_text.status().message().find("the text has " + std::to_string(n) + " tokens, at least 16 are "
                                               "needed for one window of -c 16"),
            std::string::npos)
      << short_text.status().message();
  auto one = compute_imatrix(*pkg.program, *pkg.tokenizer, calibration_text(), {1, -1, false, ""});
  ASSERT_FALSE(one.ok());
  EXPECT_NE(one.status().message().find("context 1 must be in 2.."), std::string::npos) << one.status().message();
  auto none = compute_imatrix(*pkg.program, *pkg.tokenizer, calibration_text(), {kContext, 0, false, ""});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("0 chunks asked for, expected -1 (all) or at least 1"), std::string::npos)
      << none.status().message();
}

}  // namespace
}  // namespace llmpack
