// TextLLMRunner: prompt in, streamed text out (CONTRACT G1-G8, R1-R9, S1-S2).
// It knows the model only through Program (constants, method_meta, forward)
// and text only through Tokenizer and StreamingDecoder.
//
// Thread safety: one thread drives load/generate/prefill/reset/warmup;
// stop() may be called from any thread at any time.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/log.h"
#include "core/status.h"
#include "engine/program.h"
#include "runner/forwarder.h"
#include "runner/generation_config.h"
#include "runner/stats.h"
#include "runner/text_prefiller.h"
#include "runner/text_token_generator.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

namespace llmpack {

using StatsCallback = std::function<void(const Stats&)>;

class TextLLMRunner {
 public:
  TextLLMRunner(std::unique_ptr<Program> program, std::unique_ptr<Tokenizer> tokenizer,
                LogSink log = null_log_sink());
  TextLLMRunner(const TextLLMRunner&) = delete;
  TextLLMRunner& operator=(const TextLLMRunner&) = delete;

  // Reads the package's limits and EOS ids; a second call does nothing.
  Status load();
  bool is_loaded() const { return loaded_; }

  // Tokenizes `prompt` (BOS/EOS per config), prefills it, then generates,
  // calling `on_piece` with text (the prompt first, once, with echo) and
  // `on_stats` once at the end. An empty prompt continues from the token a
  // previous prefill() predicted; with none pending it is an error. A stop()
  // ends generation early and still returns ok. Loads when needed.
  Status generate(std::string_view prompt, const GenerationConfig& config, const TokenCallback& on_piece = {},
                  const StatsCallback& on_stats = {});

  // Prefills `prompt` without generating (R7) and keeps the predicted token
  // for a following generate(""). Consecutive prefills extend the sequence.
  Status prefill(std::string_view prompt, const GenerationConfig& config);

  // Generates up to `max_new_tokens` with no callbacks, then reset() (G7).
  Status warmup(std::string_view prompt, int32_t max_new_tokens);

  // Asks a running generate/prefill to end at the next chunk or step (R9).
  void stop() { stop_.store(true, std::memory_order_release); }

  // Back to position 0 with an empty cache and a fresh sampler (G6).
  void reset();

  const Stats& stats() const { return stats_; }
  int64_t position() const { return seq_.pos; }
  const ModelLimits& limits() const { return limits_; }
  // The EOS set (G3): get_eos_ids, the tokenizer's EOS and its end-of-turn ids.
  const std::vector<int32_t>& eos_ids() const { return eos_ids_; }
  // Called with the logits a prompt's prefill ends on ([vocab_size], those the
  // next token is sampled from), before sampling (`run --dump_first_logits`).
  using LogitsObserver = std::function<void(std::span<const float>)>;
  void set_prefill_logits_observer(LogitsObserver observer) { prefill_logits_observer_ = std::move(observer); }
  // Replaces the wall clock (ms since the epoch) used for the stats; for tests.
  void set_clock(std::function<double()> now_ms) { times_.now_ms = std::move(now_ms); }

 private:
  Result<std::vector<int64_t>> tokenize(std::string_view prompt, const GenerationConfig& config) const;
  Status prepare_sampler(const GenerationConfig& config);
  // Prefills `tokens` and samples the next token. Rewinds the sequence when
  // the prefill does not complete. Returns nullopt when stopped.
  Result<std::optional<int32_t>> prefill_tokens(std::span<const int64_t> tokens);
  int64_t now_ms() const;
  void finish_stats(int64_t generated);

  std::unique_ptr<Program> program_;
  std::unique_ptr<Tokenizer> tokenizer_;
  LogSink log_;
  bool loaded_ = false;
  ModelLimits limits_;
  std::vector<int32_t> eos_ids_;
  SequenceState seq_;
  RunTimes times_;
  Forwarder forwarder_;
  TextPrefiller prefiller_;
  std::optional<Sampler> sampler_;
  std::optional<int32_t> pending_;  // predicted by prefill(), not yet emitted
  int32_t last_fed_ = -1;           // the last token fed to forward
  std::atomic<bool> stop_{false};
  Stats stats_;
  LogitsObserver prefill_logits_observer_;
};

}  // namespace llmpack
