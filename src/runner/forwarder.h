// What the runner knows of a package, read only from the Program (CONTRACT
// P3, P4), and the one place forward() is called: Forwarder::step feeds new
// tokens whatever the package kind (dynamic or static shape, with or without
// a KV cache) and keeps the sequence state.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/program.h"

namespace llmpack {

struct ModelLimits {
  int64_t max_seq_len = 0;      // S, get_max_seq_len
  int64_t max_context_len = 0;  // C, get_max_context_len (S when absent)
  int64_t token_bound = 0;      // B, method_meta("forward") input 0 dim 1
  bool dynamic_shape = true;    // dim 1 accepts 1..B (true) or exactly B (false)
  bool use_kv_cache = true;     // false: every call gets the whole sequence (R5)
  int64_t vocab_size = -1;      // get_vocab_size, -1 when absent
  std::vector<int64_t> eos_ids; // get_eos_ids, empty when absent

  // Tokens per prefill call for a KV-cache package (R1-R4).
  int64_t prefill_chunk() const;
  // Positions a generate may use: C, or with no KV cache min(C, B + 1), as a
  // whole sequence of B tokens then yields one more token.
  int64_t context_len() const;
  std::string describe() const;  // "S 128, C 512, B 127 dynamic, KV cache"
};

Result<ModelLimits> read_model_limits(const Program& program);

// Tokens fed so far. With a KV cache `pos` is the next position to write;
// without one it equals tokens.size(). `tokens` is kept for every kind: a
// no-KV-cache package is sent all of it on each call.
struct SequenceState {
  int64_t pos = 0;
  std::vector<int64_t> tokens;
  void clear() {
    pos = 0;
    tokens.clear();
  }
};

// Milliseconds measured while running, folded into Stats by the runner.
struct RunTimes {
  std::function<double()> now_ms;  // wall clock, ms since the epoch
  double execution_ms = 0.0;
  double sampling_ms = 0.0;
  double first_execution_start_ms = -1.0;
  double last_execution_end_ms = -1.0;
  void clear_aggregates() {
    execution_ms = sampling_ms = 0.0;
    first_execution_start_ms = last_execution_end_ms = -1.0;
  }
};

class Forwarder {
 public:
  // `program` may be null only if step() is never called (a runner that failed to load).
  Forwarder(Program* program, const ModelLimits& limits, SequenceState& seq, RunTimes& times)
      : program_(program), limits_(limits), seq_(seq), times_(times) {}

  // One forward call that appends `tokens` (1..B of them) to the sequence:
  // at seq.pos with a KV cache, or the whole sequence from 0 without one; a
  // static-shape input is padded to B with its last token and n_valid set
  // (R4). Returns the logits of the last new token.
  Result<LogitsView> step(std::span<const int64_t> tokens);

  const ModelLimits& limits() const { return limits_; }
  SequenceState& sequence() { return seq_; }
  RunTimes& times() { return times_; }

 private:
  Program* program_;
  const ModelLimits& limits_;
  SequenceState& seq_;
  RunTimes& times_;
  std::vector<int64_t> input_;  // reused between calls
};

}  // namespace llmpack
