#include "chat/session/chat_session.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace llmpack {
namespace {

double wall_clock_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(system_clock::now().time_since_epoch()).count();
}

std::string n_str(int64_t v) { return std::to_string(v); }

bool is_blank(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isspace(c); });
}

// Mixes the vocabulary into the program's fingerprint: the same weights with
// another tokenizer give other ids, so a cache saved with one is not valid
// with the other.
uint64_t session_identity(const Program& program, const Tokenizer& tokenizer) {
  uint64_t h = program.model_fingerprint();
  const int32_t n = tokenizer.vocab_size();
  h = fnv1a64(&n, sizeof(n), h);
  for (int32_t id = 0; id < n; ++id) {
    const std::string piece = tokenizer.piece(id);
    h = fnv1a64(piece.data(), piece.size() + 1, h);  // + the NUL: "ab","c" differs from "a","bc"
  }
  return h;
}

}  // namespace

std::string_view context_action_name(ContextAction action) {
  switch (action) {
    case ContextAction::kNone: return "none";
    case ContextAction::kNewConversation: return "new conversation";
    case ContextAction::kShifted: return "shifted";
  }
  return "?";
}

ChatSession::ChatSession(Program& program, const Tokenizer& tokenizer, ChatSessionOptions options, LogSink log)
    : program_(program), tokenizer_(tokenizer), options_(std::move(options)), log_(std::move(log)) {
  times_.now_ms = wall_clock_ms;
}

ChatSession::~ChatSession() { (void)program_.bind_kv_cache(nullptr); }

Result<std::unique_ptr<ChatSession>> ChatSession::create(Program& program, const Tokenizer& tokenizer,
                                                         ChatSessionOptions options, LogSink log) {
  std::unique_ptr<ChatSession> s(new ChatSession(program, tokenizer, std::move(options), std::move(log)));
  LLMPACK_RETURN_IF_ERROR(s->init());
  return s;
}

namespace {
// A chat reply's budget: -1 (until the context is full) or at least one token.
Status check_reply_budget(const GenerationConfig& g) {
  if (g.max_new_tokens == 0)
    return error_status("max_new_tokens 0 leaves no token for a reply (-1: until the context is full)");
  return ok_status();
}
}  // namespace

Status ChatSession::init() {
  LLMPACK_RETURN_IF_ERROR(options_.generation.validate());
  LLMPACK_RETURN_IF_ERROR(check_reply_budget(options_.generation));
  auto limits = read_model_limits(program_);
  if (!limits.ok()) return limits.status().with_context("reading the program's limits");
  limits_ = *limits;
  if (!limits_.use_kv_cache)
    return error_status("chat needs a KV cache, and this package has none (exported with --kv_cache none); "
                        "re-export it with --kv_cache off_graph");
  auto cache = program_.create_kv_cache(options_.kv);
  if (!cache.ok()) return cache.status().with_context("chat needs a runner-owned KV cache");
  cache_ = std::move(cache).value();
  LLMPACK_RETURN_IF_ERROR(program_.bind_kv_cache(cache_.get()));
  capacity_ = std::min(cache_->capacity_rows(), limits_.max_context_len);
  if (options_.max_seq_len > 0) capacity_ = std::min(capacity_, options_.max_seq_len);
  // The prefiller enforces R6 against the session's capacity.
  limits_.max_context_len = capacity_;
  if (capacity_ < 2) return error_status("chat needs a context of at least 2 positions, found " + n_str(capacity_));

  for (int64_t id : limits_.eos_ids) eos_ids_.push_back(static_cast<int32_t>(id));
  if (tokenizer_.eos_id() >= 0) eos_ids_.push_back(tokenizer_.eos_id());
  for (int32_t id : tokenizer_.end_of_turn_ids()) eos_ids_.push_back(id);
  std::sort(eos_ids_.begin(), eos_ids_.end());
  eos_ids_.erase(std::unique(eos_ids_.begin(), eos_ids_.end()), eos_ids_.end());
  if (tokenizer_.bos_id() >= 0) bos_text_ = tokenizer_.piece(tokenizer_.bos_id());
  if (tokenizer_.eos_id() >= 0) eos_text_ = tokenizer_.piece(tokenizer_.eos_id());

  if (options_.template_source.empty())
    return error_status("no chat template: the package has none; pass --chat_template NAME (" +
                        [] {
                          std::string names;
                          for (const auto& n : builtin_chat_template_names()) names += (names.empty() ? "" : ", ") + n;
                          return names;
                        }() + ")");
  auto parsed = ChatTemplate::parse(options_.template_source);
  if (!parsed.ok()) return parsed.status().with_context("chat template");
  template_ = std::move(parsed).value();

  forwarder_ = std::make_unique<Forwarder>(&program_, limits_, seq_, times_);
  prefiller_ = std::make_unique<TextPrefiller>(*forwarder_, log_);
  identity_ = session_identity(program_, tokenizer_);
  LLMPACK_RETURN_IF_ERROR(prepare_sampler());
  reset();
  if (!options_.system_prompt.empty()) {
    // The system prompt with an empty user turn must leave room for a reply.
    auto t = conversation_tokens(messages_, false);
    if (!t.ok()) return t.status().with_context("rendering the system prompt");
    if (!fits(static_cast<int64_t>(t->size()) + 1))
      return error_status("the system prompt takes " + n_str(static_cast<int64_t>(t->size())) +
                          " tokens, more than the chat context of " + n_str(capacity_) + " positions allows");
  }
  return ok_status();
}

Status ChatSession::prepare_sampler() {
  const GenerationConfig& g = options_.generation;
  const uint64_t seed = g.seed.value_or(static_cast<uint64_t>(wall_clock_ms()));
  auto sampler = Sampler::create(g.sampler_params(), seed);
  if (!sampler.ok()) return sampler.status();
  sampler_.emplace(std::move(sampler).value());
  return ok_status();
}

Status ChatSession::set_generation_config(const GenerationConfig& config) {
  LLMPACK_RETURN_IF_ERROR(config.validate());
  LLMPACK_RETURN_IF_ERROR(check_reply_budget(config));
  LLMPACK_RETURN_IF_ERROR(sampler_->set_params(config.sampler_params()));
  options_.generation = config;
  return ok_status();
}

Result<std::vector<int64_t>> ChatSession::conversation_tokens(const std::vector<ChatMessage>& messages,
                                                              bool add_generation_prompt) const {
  auto text = template_->render(messages, add_generation_prompt, bos_text_, eos_text_);
  if (!text.ok()) return text.status().with_context("rendering the chat template");
  EncodeOptions eo;
  eo.parse_special = true;  // the template's markers are control tokens
  auto ids = tokenizer_.encode(*text, eo);
  if (!ids.ok()) return ids.status().with_context("tokenizing the rendered conversation");
  std::vector<int64_t> out;
  out.reserve(ids->size() + 1);
  // BOS on the first turn only: position 0 of the conversation, unless the
  // template already wrote it (its {{ bos_token }} parses to the BOS id).
  const int32_t bos = tokenizer_.bos_id();
  if (bos >= 0 && tokenizer_.default_num_bos() > 0 && (ids->empty() || (*ids)[0] != bos)) out.push_back(bos);
  out.insert(out.end(), ids->begin(), ids->end());
  return out;
}

void ChatSession::rewind(int64_t n_tokens) {
  n_tokens = std::clamp<int64_t>(n_tokens, 0, static_cast<int64_t>(seq_.tokens.size()));
  seq_.tokens.resize(static_cast<size_t>(n_tokens));
  seq_.pos = n_tokens;
}

void ChatSession::reset() {
  messages_.clear();
  if (!options_.system_prompt.empty()) messages_.push_back({"system", options_.system_prompt});
  turns_.clear();
  awaiting_reply_ = false;
  rewind(0);
  if (sampler_) sampler_->reset(sampler_->seed());
}

Result<UserTurnResult> ChatSession::add_user_message(std::string_view text) {
  if (awaiting_reply_) return error_status("a user message is already waiting for its reply; call generate_reply");
  if (is_blank(text)) return error_status("the message is empty");
  UserTurnResult result;
  std::vector<ChatMessage> next = messages_;
  next.push_back({"user", std::string(text)});
  auto tokens = conversation_tokens(next, true);
  if (!tokens.ok()) return tokens.status();
  const size_t system = options_.system_prompt.empty() ? 0 : 1;
  const auto turns_before = static_cast<int64_t>(turns_.size());
  if (!fits(static_cast<int64_t>(tokens->size()))) {
    // C5: the conversation with this message does not fit. Shift: drop the
    // oldest turns after the system prompt one at a time until it does. Else
    // a new conversation: the system prompt and this message alone.
    std::vector<ChatMessage> trimmed = next;
    int64_t dropped = 0;
    while (trimmed.size() > system + 1) {
      if (options_.context_shift) {
        // A turn is a user message and the reply that followed it.
        size_t end = system + 1;
        while (end < trimmed.size() - 1 && trimmed[end].role != "user") ++end;
        trimmed.erase(trimmed.begin() + static_cast<std::ptrdiff_t>(system),
                      trimmed.begin() + static_cast<std::ptrdiff_t>(end));
      } else {
        trimmed.erase(trimmed.begin() + static_cast<std::ptrdiff_t>(system), trimmed.end() - 1);
      }
      ++dropped;
      tokens = conversation_tokens(trimmed, true);
      if (!tokens.ok()) return tokens.status();
      if (fits(static_cast<int64_t>(tokens->size()))) break;
    }
    if (!fits(static_cast<int64_t>(tokens->size())))
      return error_status("the message needs " + n_str(static_cast<int64_t>(tokens->size())) +
                          " tokens with the template" + (system ? " and the system prompt" : "") +
                          ", more than the chat context of " + n_str(capacity_) +
                          " positions leaves room for; shorten it");
    result.action = options_.context_shift ? ContextAction::kShifted : ContextAction::kNewConversation;
    result.dropped_turns = options_.context_shift ? dropped : turns_before;
    next = std::move(trimmed);
    // Turns are rebuilt from the kept messages; their cache positions are
    // unknown until fed again, so undo cannot reach behind this point.
    turns_.clear();
    for (size_t i = system; i + 1 < next.size(); ++i)
      if (next[i].role == "user") turns_.push_back({i, 0});
  }
  messages_ = std::move(next);
  turns_.push_back({messages_.size() - 1, -1});
  awaiting_reply_ = true;
  result.prompt_tokens = static_cast<int64_t>(tokens->size());
  return result;
}

// Brings the cache to the tokenization of the conversation with the
// generation prompt, feeding only what differs from what it holds. Returns
// the first token predicted.
Result<int64_t> ChatSession::feed_conversation(TurnReport& report) {
  LLMPACK_ASSIGN_OR_RETURN(std::vector<int64_t> target, conversation_tokens(messages_, true));
  size_t keep = 0;
  const size_t held = std::min(seq_.tokens.size(), target.size());
  while (keep < held && seq_.tokens[keep] == target[keep]) ++keep;
  // At least one token goes in, for the logits of the next one.
  keep = std::min(keep, target.size() - 1);
  rewind(static_cast<int64_t>(keep));
  turns_.back().synced_from = static_cast<int64_t>(keep);
  report.tokens_reused = static_cast<int64_t>(keep);
  std::span<const int64_t> fresh(target.data() + keep, target.size() - keep);
  report.tokens_fed = static_cast<int64_t>(fresh.size());
  LLMPACK_RETURN_IF_ERROR(prefiller_->check_fits(static_cast<int64_t>(fresh.size())));
  auto logits = prefiller_->prefill(fresh, stop_);
  if (!logits.ok()) return logits.status();
  for (int64_t t : fresh) sampler_->accept(static_cast<int32_t>(t));
  const double t0 = times_.now_ms();
  auto next = sampler_->sample(logits->last());
  times_.sampling_ms += times_.now_ms() - t0;
  if (!next.ok()) return next.status();
  return static_cast<int64_t>(*next);
}

Result<TurnReport> ChatSession::generate_reply(const TokenCallback& on_piece) {
  if (!awaiting_reply_) return error_status("no user message is waiting for a reply; call add_user_message first");
  stop_.store(false, std::memory_order_release);
  times_.clear_aggregates();
  TurnReport report;
  Stats& st = report.stats;
  st.inference_start_ms = static_cast<int64_t>(times_.now_ms());
  std::string reply;
  auto collect = [&](const std::string& piece) {
    reply += piece;
    if (on_piece) on_piece(piece);
  };
  auto fail = [&](Status status) {
    // The failed turn is dropped so the conversation stays consistent.
    (void)undo(1);
    return status;
  };
  auto first = feed_conversation(report);
  st.num_prompt_tokens = report.tokens_fed;
  st.prompt_eval_end_ms = static_cast<int64_t>(times_.now_ms());
  if (!first.ok()) {
    if (first.status().message() != kPrefillStoppedMessage) return fail(first.status());
    report.end = GenerationEnd::kStopped;  // stopped while feeding: an empty reply
  } else {
    st.first_token_ms = static_cast<int64_t>(times_.now_ms());
    const int64_t room = capacity_ - seq_.pos;
    int64_t budget = room;
    if (options_.generation.max_new_tokens > 0) budget = std::min<int64_t>(budget, options_.generation.max_new_tokens);
    TextTokenGenerator generator(*forwarder_, *sampler_, tokenizer_, eos_ids_);
    auto outcome = generator.generate(static_cast<int32_t>(*first), static_cast<int32_t>(seq_.tokens.back()), budget,
                                      options_.generation, collect, stop_);
    if (!outcome.ok()) return fail(outcome.status());
    report.end = outcome->end;
    report.generated = outcome->generated;
  }
  st.num_generated_tokens = report.generated;
  st.inference_end_ms = static_cast<int64_t>(times_.now_ms());
  st.aggregate_sampling_time_ms = static_cast<int64_t>(times_.sampling_ms);
  st.aggregate_model_execution_time_ms = static_cast<int64_t>(times_.execution_ms);
  if (times_.first_execution_start_ms >= 0) {
    st.model_execution_start_ms = static_cast<int64_t>(std::floor(times_.first_execution_start_ms));
    st.model_execution_end_ms = static_cast<int64_t>(std::floor(times_.last_execution_end_ms));
  }
  report.reply = reply;
  messages_.push_back({"assistant", std::move(reply)});
  awaiting_reply_ = false;
  return report;
}

Status ChatSession::undo(int64_t n) {
  const auto have = static_cast<int64_t>(turns_.size());
  if (n < 1) return error_status("undo takes a number of turns >= 1, found " + n_str(n));
  if (n > have) return error_status("cannot undo " + n_str(n) + " turns, the conversation has " + n_str(have));
  const Turn first = turns_[static_cast<size_t>(have - n)];
  // Everything the cache held before this turn was fed stays valid; a turn
  // never fed (waiting for its reply) leaves the cache as it is.
  if (first.synced_from >= 0) rewind(first.synced_from);
  messages_.resize(first.first_message);
  turns_.resize(static_cast<size_t>(have - n));
  awaiting_reply_ = false;
  return ok_status();
}

}  // namespace llmpack
