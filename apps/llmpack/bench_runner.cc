#include "bench_runner.h"

#include <algorithm>
#include <chrono>

namespace llmpack::cli {
namespace {

int64_t elapsed_ns(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Result<BenchRunner> BenchRunner::create(Program& program, uint64_t seed) {
  BenchRunner runner(program, seed);
  LLMPACK_ASSIGN_OR_RETURN(runner.vocab_size_, get_int_constant(program, "get_vocab_size"));
  auto meta = program.method_meta("forward");
  if (!meta.ok()) return meta.status();
  if (meta->inputs.empty() || meta->inputs[0].sizes.size() != 2)
    return error_status("forward's token input is not [1, B]");
  LLMPACK_ASSIGN_OR_RETURN(runner.context_len_, get_int_constant(program, "get_max_context_len"));
  runner.token_bound_ = meta->inputs[0].sizes[1];
  runner.dynamic_ = meta->inputs[0].dynamic_dim1;
  if (runner.vocab_size_ < 1 || runner.token_bound_ < 1)
    return error_status("the program reports a vocabulary of " + std::to_string(runner.vocab_size_) +
                        " and a token bound of " + std::to_string(runner.token_bound_));
  return runner;
}

std::vector<int64_t> BenchRunner::random_tokens(int64_t n) {
  std::vector<int64_t> tokens(static_cast<size_t>(n));
  for (auto& t : tokens) {  // splitmix64
    uint64_t z = (rng_state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    t = static_cast<int64_t>((z ^ (z >> 31)) % static_cast<uint64_t>(vocab_size_));
  }
  return tokens;
}

// A static-shape program takes exactly B tokens: the chunk is padded and
// only `count` of them are valid (R4).
Status BenchRunner::forward_chunk(const std::vector<int64_t>& tokens, int64_t begin, int64_t count,
                                  int64_t start_pos) {
  std::span<const int64_t> chunk(tokens.data() + begin, static_cast<size_t>(count));
  std::vector<int64_t> padded;
  if (!dynamic_ && count < token_bound_) {
    padded.assign(chunk.begin(), chunk.end());
    padded.resize(static_cast<size_t>(token_bound_), chunk.back());
    chunk = padded;
  }
  auto logits = program_->forward(chunk, start_pos, false, count);
  if (!logits.ok()) return logits.status();
  const auto last = logits->last();
  last_argmax_ = std::max_element(last.begin(), last.end()) - last.begin();
  return ok_status();
}

Status BenchRunner::warmup(int64_t prompt_tokens) {
  LLMPACK_RETURN_IF_ERROR(prompt_ns(std::clamp<int64_t>(prompt_tokens, 1, token_bound_), token_bound_).status());
  return generate_ns(1).status();
}

Status BenchRunner::check_context(const std::vector<int64_t>& depths, int64_t test_tokens,
                                  int64_t ttft_tokens) const {
  const std::string holds = ", and this model's cache holds " + std::to_string(context_len_);
  if (!depths.empty()) {
    const int64_t deepest = *std::max_element(depths.begin(), depths.end());
    const int64_t needed = deepest + std::max<int64_t>(test_tokens, 1);
    if (needed > context_len_)
      return error_status("-d " + std::to_string(deepest) + " followed by a test of " + std::to_string(test_tokens) +
                          " tokens needs " + std::to_string(needed) + " positions of context" + holds +
                          " (get_max_context_len): lower -d, -p, -n or -pg");
  }
  if (ttft_tokens > context_len_)
    return error_status("--ttft " + std::to_string(ttft_tokens) + " needs " + std::to_string(ttft_tokens) +
                        " positions of context" + holds);
  return ok_status();
}

Status BenchRunner::fill_context(int64_t depth, int64_t test_tokens) {
  if (depth <= 0) return ok_status();
  const std::string what = "filling " + std::to_string(depth) + " tokens of context";
  LLMPACK_RETURN_IF_ERROR(prompt_ns(depth, token_bound_).status().with_context(what));
  if (test_tokens <= 1) return ok_status();
  return generate_ns(1, depth + test_tokens - 1).status().with_context(what);
}

Result<int64_t> BenchRunner::prompt_ns(int64_t n, int64_t ubatch, int64_t start, int64_t batch) {
  ubatch = std::clamp<int64_t>(ubatch, 1, token_bound_);
  if (batch <= 0) batch = std::max<int64_t>(n, 1);
  const std::vector<int64_t> tokens = random_tokens(n);
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t piece = 0; piece < n; piece += batch) {
    const int64_t piece_end = std::min(piece + batch, n);
    for (int64_t i = piece; i < piece_end; i += ubatch)
      LLMPACK_RETURN_IF_ERROR(forward_chunk(tokens, i, std::min(ubatch, piece_end - i), start + i));
  }
  return elapsed_ns(t0);
}

Result<int64_t> BenchRunner::generate_ns(int64_t n, int64_t start) {
  const std::vector<int64_t> tokens = random_tokens(n);
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; ++i) LLMPACK_RETURN_IF_ERROR(forward_chunk(tokens, i, 1, start + i));
  return elapsed_ns(t0);
}

}  // namespace llmpack::cli
