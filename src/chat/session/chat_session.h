// ChatSession (CONTRACT C1-C7): a conversation kept in a runner-owned
// (off-graph) KV cache, so each turn feeds only its new tokens.
//
// The invariant every turn keeps (C3): before a reply is generated, the
// cache holds exactly the tokenization of the chat template rendered over the
// whole conversation with the generation prompt. The session re-renders the
// conversation, keeps the longest common prefix with what the cache holds and
// feeds only the rest. So the previous reply is closed with the template's
// end-of-turn text; a reply cut by max_new_tokens gets its last (never fed)
// token fed first, as part of the reply's text; an EOS that ended a reply is
// never fed, since the template writes its own end of turn. When a reply's
// tokens differ from the tokenization of its text (a model may spell a word
// in pieces), the cache is rewound to where they part: equality wins over
// reuse, and TurnReport::tokens_reused says how much was kept.
//
// Thread safety: one thread drives the session; stop() may be called from
// any thread (or a signal handler) at any time.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chat/template/chat_template.h"
#include "core/log.h"
#include "core/status.h"
#include "engine/kv_cache.h"
#include "engine/program.h"
#include "runner/forwarder.h"
#include "runner/generation_config.h"
#include "runner/stats.h"
#include "runner/text_prefiller.h"
#include "runner/text_token_generator.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

namespace llmpack {

struct ChatSessionOptions {
  std::string template_source;   // Jinja chat template (the package's or a built-in)
  std::string system_prompt;     // empty: none
  KvCacheOptions kv;             // dtype, initial rows, capacity (0: the package's C)
  int64_t max_seq_len = -1;      // caps the conversation's tokens, as --seq_len caps a run; -1: none
  bool context_shift = false;    // C5: drop the oldest turns instead of starting over
  // Sampling, max_new_tokens and stop strings; echo, num_bos, num_eos and
  // seq_len are not used (the template decides the prompt, max_seq_len caps).
  GenerationConfig generation;
};

// What add_user_message had to do to make room (C5).
enum class ContextAction { kNone, kNewConversation, kShifted };

struct UserTurnResult {
  ContextAction action = ContextAction::kNone;
  int64_t dropped_turns = 0;     // turns the new conversation or the shift dropped
  int64_t prompt_tokens = 0;     // the whole conversation's tokens with this message
};

struct TurnReport {
  std::string reply;             // the text the callback received
  GenerationEnd end = GenerationEnd::kBudget;
  int64_t tokens_fed = 0;        // prompt tokens fed this turn (the new ones)
  int64_t tokens_reused = 0;     // cached tokens kept from earlier turns
  int64_t generated = 0;         // tokens generated (EOS excluded)
  Stats stats;                   // S1 figures of this turn (num_prompt_tokens = tokens_fed)
};

class ChatSession {
 public:
  // Makes and binds the session's cache. Fails with a clear message for a
  // package whose cache is in-graph or absent (C1), an unparsable template,
  // or a system prompt that alone does not fit.
  static Result<std::unique_ptr<ChatSession>> create(Program& program, const Tokenizer& tokenizer,
                                                     ChatSessionOptions options, LogSink log = null_log_sink());
  ~ChatSession();
  ChatSession(const ChatSession&) = delete;
  ChatSession& operator=(const ChatSession&) = delete;

  // Adds a user turn. An empty (all-space) message is an error and changes
  // nothing; so does a message that cannot fit even a fresh conversation.
  // When the conversation with it does not fit, C5 applies (see
  // UserTurnResult). A user message already waiting for its reply is an error.
  Result<UserTurnResult> add_user_message(std::string_view text);

  // Feeds the new tokens and generates the reply to the pending user message,
  // streaming text through `on_piece` (may be empty). A stop() ends it early
  // (the reply keeps what was said). The reply becomes the assistant turn.
  Result<TurnReport> generate_reply(const TokenCallback& on_piece = {});

  // Drops the last n turns (user message and reply), rewinding the cache to
  // where it was before the earliest of them was fed.
  Status undo(int64_t n = 1);
  // Back to the system prompt alone, an empty cache and a fresh sampler.
  void reset();
  // Persists the conversation and its cache; loads one saved with the same
  // model and tokenizer. A failed load changes nothing.
  Status save(const std::string& path) const;
  Status load(const std::string& path);

  void stop() { stop_.store(true, std::memory_order_release); }
  // New sampling, max_new_tokens and stop strings for the following replies;
  // the sampler's random stream carries on (D7).
  Status set_generation_config(const GenerationConfig& config);
  const GenerationConfig& generation_config() const { return options_.generation; }

  // The tokens the cache holds, in order.
  std::span<const int64_t> tokens() const { return seq_.tokens; }
  const std::vector<ChatMessage>& messages() const { return messages_; }
  int64_t n_turns() const { return static_cast<int64_t>(turns_.size()); }
  // Positions the conversation may use: min(cache capacity, C, max_seq_len).
  int64_t capacity() const { return capacity_; }
  const KvCache& cache() const { return *cache_; }
  // The tokenization of the template rendered over `messages` (BOS per the
  // model's rule, special tokens parsed): what C3 says the cache must hold.
  Result<std::vector<int64_t>> conversation_tokens(const std::vector<ChatMessage>& messages,
                                                   bool add_generation_prompt) const;
  // Identity written in saved files: the program's fingerprint and the vocabulary.
  uint64_t identity() const { return identity_; }

 private:
  struct Turn {
    size_t first_message = 0;  // index of its user message in messages_
    int64_t synced_from = -1;  // cache length kept when it was fed (-1: not yet fed)
  };
  ChatSession(Program& program, const Tokenizer& tokenizer, ChatSessionOptions options, LogSink log);
  Status init();
  void rewind(int64_t n_tokens);
  bool fits(int64_t n_tokens) const { return n_tokens < capacity_; }
  Status prepare_sampler();
  Result<int64_t> feed_conversation(TurnReport& report);
  std::string encode_metadata() const;
  Status decode_metadata(const std::string& text, int64_t n_tokens, std::vector<ChatMessage>& messages,
                         std::vector<Turn>& turns) const;

  Program& program_;
  const Tokenizer& tokenizer_;
  ChatSessionOptions options_;
  LogSink log_;
  std::unique_ptr<ChatTemplate> template_;
  std::unique_ptr<KvCache> cache_;
  ModelLimits limits_;
  std::vector<int32_t> eos_ids_;
  std::string bos_text_, eos_text_;
  int64_t capacity_ = 0;
  uint64_t identity_ = 0;
  SequenceState seq_;
  RunTimes times_;
  std::unique_ptr<Forwarder> forwarder_;
  std::unique_ptr<TextPrefiller> prefiller_;
  std::optional<Sampler> sampler_;
  std::vector<ChatMessage> messages_;  // the system prompt first, when set
  std::vector<Turn> turns_;
  bool awaiting_reply_ = false;
  std::atomic<bool> stop_{false};
};

std::string_view context_action_name(ContextAction action);

}  // namespace llmpack
