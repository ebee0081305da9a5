// The timed loops of `llmpack bench`, straight through Program::forward with
// random token ids (speed does not depend on which tokens):
//   pp N: one prefill of N tokens from position `start`, in chunks of `batch` tokens;
//   tg N: N calls of one token each, from position `start`;
// each returns its wall time in nanoseconds. `start` is 0 (as llama-bench
// does by default) or the depth that fill_context put into the KV cache
// (llama-bench's -d: how fast a test runs after that many tokens of context).
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "engine/program.h"

namespace llmpack::cli {

class BenchRunner {
 public:
  // Reads the token bound B and whether forward takes fewer tokens than B.
  static Result<BenchRunner> create(Program& program, uint64_t seed);

  int64_t token_bound() const { return token_bound_; }
  // Every test fits the cache (get_max_context_len positions): depth +
  // test_tokens for the deepest depth, and the --ttft prompt from position
  // 0; checked before anything runs (a -d list whose last depth does not
  // fit would otherwise fail after minutes of the others' tests).
  Status check_context(const std::vector<int64_t>& depths, int64_t test_tokens, int64_t ttft_tokens) const;
  // A prefill of one chunk of min(B, prompt_tokens) tokens and one decode
  // step, untimed, like llama-bench's warmup run: the page faults of the
  // weights and of the forward's buffers (which loading does not write) land
  // here, so pass the longest chunk the tests will send.
  Status warmup(int64_t prompt_tokens);
  // Untimed: a prefill of `depth` tokens from position 0 in chunks of B, the
  // context that tests from position `depth` attend to (a test writes only
  // positions from its start on, so one fill serves every repetition); then
  // one token at position depth + test_tokens - 1, the last a test will
  // write, so the KV cache has grown to its final size before the first
  // repetition (growing copies the cache: 10-15 against 21-26 t/s for the
  // first tg32 at depth 4096 on the 1B shape). That row is written again by
  // the tests before anything reads it.
  Status fill_context(int64_t depth, int64_t test_tokens);
  // Prefill of n tokens in chunks of at most `ubatch` (<= B); includes picking
  // the first token (argmax of the last logits), so it is a time to first token.
  // With `batch` > 0 the prompt is first cut into pieces of `batch` tokens,
  // each chunked on its own, as llama.cpp splits a logical batch (-b) into
  // physical ones (-ub): -b 6 -ub 4 sends a prompt of 16 as 4, 2, 4, 2, 4.
  Result<int64_t> prompt_ns(int64_t n, int64_t ubatch, int64_t start = 0, int64_t batch = 0);
  Result<int64_t> generate_ns(int64_t n, int64_t start = 0);

 private:
  BenchRunner(Program& program, uint64_t seed) : program_(&program), rng_state_(seed) {}
  std::vector<int64_t> random_tokens(int64_t n);
  Status forward_chunk(const std::vector<int64_t>& tokens, int64_t begin, int64_t count, int64_t start_pos);

  Program* program_;
  uint64_t rng_state_;
  int64_t vocab_size_ = 1;
  int64_t token_bound_ = 1;
  int64_t context_len_ = 1;  // get_max_context_len
  bool dynamic_ = true;
  int64_t last_argmax_ = 0;  // keeps the argmax from being optimized away
};

}  // namespace llmpack::cli
