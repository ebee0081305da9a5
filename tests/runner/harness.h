// Builds a TextLLMRunner over the fakes and collects what it emits.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runner/text_llm_runner.h"
#include "runner/fakes.h"

namespace llmpack::testing {

struct LogRecord {
  LogLevel level;
  std::string message;
};

struct Harness {
  explicit Harness(FakeKind kind) {
    auto program_owner = std::make_unique<FakeProgram>(std::move(kind));
    program = program_owner.get();
    auto sink_logs = logs;
    runner = std::make_unique<TextLLMRunner>(std::move(program_owner), std::make_unique<FakeTokenizer>(),
                                             [sink_logs](LogLevel level, std::string_view message) {
                                               sink_logs->push_back({level, std::string(message)});
                                             });
  }

  Status generate(std::string_view prompt, const GenerationConfig& config) {
    pieces.clear();
    return runner->generate(prompt, config, [this](const std::string& piece) { pieces.push_back(piece); },
                            [this](const Stats& s) { stats.push_back(s); });
  }

  // Everything emitted after the echo (when echo is on, pieces[0] is the prompt).
  std::string text(bool echo) const {
    std::string out;
    for (size_t i = echo ? 1 : 0; i < pieces.size(); ++i) out += pieces[i];
    return out;
  }

  int warnings() const {
    int n = 0;
    for (const auto& r : *logs) n += r.level == LogLevel::kWarning;
    return n;
  }

  FakeProgram* program = nullptr;
  std::shared_ptr<std::vector<LogRecord>> logs = std::make_shared<std::vector<LogRecord>>();
  std::unique_ptr<TextLLMRunner> runner;
  std::vector<std::string> pieces;
  std::vector<Stats> stats;
};

// A config that is deterministic and does not echo.
inline GenerationConfig greedy(int32_t max_new_tokens) {
  GenerationConfig c;
  c.temperature = 0.0f;
  c.echo = false;
  c.max_new_tokens = max_new_tokens;
  return c;
}

// A prompt of exactly `n` tokens when num_bos is 0 (one token per character).
inline std::string prompt_of(int64_t n) {
  std::string s;
  for (int64_t i = 0; i < n; ++i) s += static_cast<char>('a' + (i * 7) % 26);
  return s;
}

inline FakeKind dynamic_kv(int64_t S, int64_t C) { return {"dynamic", S, C, S, true, true}; }
inline FakeKind legacy(int64_t S, int64_t C) { return {"legacy", S, C, S - 1, true, true}; }
inline FakeKind static_one(int64_t S, int64_t C) { return {"static[1,1]", S, C, 1, false, true}; }
inline FakeKind static_b(int64_t S, int64_t C, int64_t B) {
  return {"static[1," + std::to_string(B) + "]", S, C, B, false, true};
}
inline FakeKind no_kv(int64_t S, int64_t C) { return {"no_kv", S, C, S, true, false}; }

}  // namespace llmpack::testing
