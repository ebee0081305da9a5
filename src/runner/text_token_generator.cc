#include "runner/text_token_generator.h"

#include <algorithm>

#include "runner/stop_string_filter.h"
#include "tokenizer/streaming_decoder.h"

namespace llmpack {

bool TextTokenGenerator::is_eos(int32_t token) const {
  return std::find(eos_ids_.begin(), eos_ids_.end(), token) != eos_ids_.end();
}

Result<DecodeOutcome> TextTokenGenerator::generate(int32_t first, int32_t prev, int64_t budget,
                                                   const GenerationConfig& config, const TokenCallback& on_piece,
                                                   const std::atomic<bool>& stop) {
  StreamingDecoder decoder(tokenizer_);
  StopStringFilter filter(config.stop);
  auto emit = [&](const std::string& piece) {
    if (on_piece) on_piece(piece);
  };
  // Text still held (an unfinished character, a possible stop string) when
  // generation ends early: released as one extra piece.
  auto release_held = [&] {
    std::string rest = filter.push(decoder.flush()).text + filter.flush();
    if (!rest.empty()) emit(rest);
  };

  DecodeOutcome outcome;
  int32_t token = first;
  RunTimes& times = forwarder_.times();
  while (true) {
    const bool eos = is_eos(token);
    if (eos && !config.ignore_eos) {
      outcome.end = GenerationEnd::kEos;
      release_held();
      break;
    }
    std::string piece;
    bool matched = false;
    if (!eos) {  // EOS text is never emitted, even with ignore_eos
      auto text = decoder.push(prev, token);
      if (!text.ok()) return text.status().with_context("decoding token " + std::to_string(token));
      auto filtered = filter.push(*text);
      piece = std::move(filtered.text);
      matched = filtered.matched;
    }
    ++outcome.generated;
    outcome.last_token = token;
    if (matched) {
      emit(piece);
      outcome.end = GenerationEnd::kStopString;
      break;
    }
    if (outcome.generated >= budget) {
      // The last piece carries whatever was held: no extra callback (G2).
      auto tail = filter.push(decoder.flush());
      piece += tail.text;
      if (!tail.matched) piece += filter.flush();
      emit(piece);
      outcome.end = tail.matched ? GenerationEnd::kStopString : GenerationEnd::kBudget;
      break;
    }
    emit(piece);
    if (stop.load(std::memory_order_acquire)) {
      outcome.end = GenerationEnd::kStopped;
      release_held();
      break;
    }
    const int64_t input = token;
    auto logits = forwarder_.step(std::span<const int64_t>(&input, 1));
    if (!logits.ok()) {
      return logits.status().with_context("decode at position " + std::to_string(forwarder_.sequence().pos));
    }
    const double t0 = times.now_ms();
    auto next = sampler_.sample(logits->last());
    times.sampling_ms += times.now_ms() - t0;
    if (!next.ok()) return next.status();
    prev = token;
    token = *next;
  }
  return outcome;
}

}  // namespace llmpack
