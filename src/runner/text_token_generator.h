// The decode loop (CONTRACT G2-G4, R9): emits the token prefill predicted,
// then forwards one token at a time until the budget, an EOS, a stop string
// or stop(). Text goes out through a StreamingDecoder (whole UTF-8
// characters only) and a StopStringFilter.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "runner/forwarder.h"
#include "runner/generation_config.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

namespace llmpack {

using TokenCallback = std::function<void(const std::string&)>;

enum class GenerationEnd { kBudget, kEos, kStopString, kStopped };

struct DecodeOutcome {
  int64_t generated = 0;      // tokens the callback was fired for (EOS excluded)
  GenerationEnd end = GenerationEnd::kBudget;
  int32_t last_token = -1;    // the last token generated (not forwarded)
};

class TextTokenGenerator {
 public:
  TextTokenGenerator(Forwarder& forwarder, Sampler& sampler, const Tokenizer& tokenizer,
                     const std::vector<int32_t>& eos_ids)
      : forwarder_(forwarder), sampler_(sampler), tokenizer_(tokenizer), eos_ids_(eos_ids) {}

  // `first` was sampled from the prefill logits and follows `prev` (for
  // decoding). The callback fires once per generated token, EOS excluded
  // (an empty piece while text is held back), plus once more at an EOS, a
  // stop string or stop() when held text remains. `on_piece` may be empty.
  Result<DecodeOutcome> generate(int32_t first, int32_t prev, int64_t budget, const GenerationConfig& config,
                                 const TokenCallback& on_piece, const std::atomic<bool>& stop);

 private:
  bool is_eos(int32_t token) const;

  Forwarder& forwarder_;
  Sampler& sampler_;
  const Tokenizer& tokenizer_;
  const std::vector<int32_t>& eos_ids_;
};

}  // namespace llmpack
