// Speed of the Llama 3 tokenizer (a benchmark, not a timed test: run with
// --gtest_also_run_disabled_tests on a Release build; the figures go to
// docs/PERFORMANCE.md): loading the 9 MB tokenizer.json(.gz) and tokenizing
// 1 MB of English text on one core.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "tokenizer/hf_tokenizer_json.h"
#include "unit/tokenizer/vocab_vectors.h"

namespace llmpack::testing {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(BpeBenchmark, DISABLED_Llama3LoadAndEncode) {
  LLMPACK_REQUIRE_FIXTURE(path, "hf-tokenizers/llama3/tokenizer.json.gz");
  auto t0 = std::chrono::steady_clock::now();
  auto json = read_maybe_gzip(path);
  ASSERT_TRUE(json.ok());
  const double t_gunzip = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  auto vocab = parse_hf_tokenizer_json(*json);
  ASSERT_TRUE(vocab.ok());
  const double t_parse = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  auto tok = BpeTokenizer::create(std::move(*vocab));
  ASSERT_TRUE(tok.ok());
  const double t_build = seconds_since(t0);
  // English prose: the fixtures README (tables, prose, code names), repeated.
  const std::string base = read_all(fixture_path("README.md"));
  ASSERT_FALSE(base.empty());
  std::string text;
  while (text.size() < (1u << 20)) text += base;
  text.resize(1u << 20);
  t0 = std::chrono::steady_clock::now();
  auto ids = (*tok)->encode(text, 0, 0);
  const double t_encode = seconds_since(t0);
  ASSERT_TRUE(ids.ok());
  std::printf("[ bench    ] llama3 tokenizer.json: gunzip %.3f s, parse %.3f s, build %.3f s (load %.3f s of %zu B)\n",
              t_gunzip, t_parse, t_build, t_gunzip + t_parse + t_build, json->size());
  t0 = std::chrono::steady_clock::now();
  std::string decoded;
  int32_t prev = -1;
  for (int32_t id : *ids) {  // one call a token, as generation decodes
    auto piece = (*tok)->decode(prev, id);
    ASSERT_TRUE(piece.ok());
    decoded += *piece;
    prev = id;
  }
  const double t_decode = seconds_since(t0);
  std::printf("[ bench    ] llama3 encode 1 MiB: %.3f s, %zu tokens (%.2f MB/s); decode them one at a time: %.3f s\n",
              t_encode, ids->size(), 1.048576 / t_encode, t_decode);
  EXPECT_GT(ids->size(), 100000u);
  EXPECT_EQ(decoded, text);  // byte-level BPE round-trips any text
}

}  // namespace
}  // namespace llmpack::testing
