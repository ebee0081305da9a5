#include "runner/text_llm_runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace llmpack {
namespace {

double wall_clock_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(system_clock::now().time_since_epoch()).count();
}

uint64_t seed_from_clock() {
  const auto ns = std::chrono::high_resolution_clock::now().time_since_epoch().count();
  // splitmix64 finalizer: nearby clock values give unrelated seeds.
  uint64_t z = static_cast<uint64_t>(ns) + 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace

TextLLMRunner::TextLLMRunner(std::unique_ptr<Program> program, std::unique_ptr<Tokenizer> tokenizer, LogSink log)
    : program_(std::move(program)),
      tokenizer_(std::move(tokenizer)),
      log_(log ? std::move(log) : null_log_sink()),
      forwarder_(program_.get(), limits_, seq_, times_),
      prefiller_(forwarder_, log_) {
  times_.now_ms = wall_clock_ms;
}

int64_t TextLLMRunner::now_ms() const { return static_cast<int64_t>(std::floor(times_.now_ms())); }

Status TextLLMRunner::load() {
  if (loaded_) return ok_status();
  if (!program_ || !tokenizer_) return error_status("runner: expected a program and a tokenizer, got null");
  stats_.model_load_start_ms = now_ms();
  auto limits = read_model_limits(*program_);
  if (!limits.ok()) return limits.status().with_context("loading the program's limits");
  limits_ = *limits;
  if (limits_.vocab_size > 0 && tokenizer_->vocab_size() > limits_.vocab_size) {
    return error_status("the tokenizer's vocabulary of " + std::to_string(tokenizer_->vocab_size()) +
                        " tokens exceeds the model's get_vocab_size " + std::to_string(limits_.vocab_size));
  }
  eos_ids_.clear();
  for (int64_t id : limits_.eos_ids) eos_ids_.push_back(static_cast<int32_t>(id));
  if (tokenizer_->eos_id() >= 0) eos_ids_.push_back(tokenizer_->eos_id());
  for (int32_t id : tokenizer_->end_of_turn_ids()) eos_ids_.push_back(id);
  std::sort(eos_ids_.begin(), eos_ids_.end());
  eos_ids_.erase(std::unique(eos_ids_.begin(), eos_ids_.end()), eos_ids_.end());
  log_(LogLevel::kInfo, "program limits: " + limits_.describe());
  stats_.model_load_end_ms = now_ms();
  loaded_ = true;
  return ok_status();
}

Result<std::vector<int64_t>> TextLLMRunner::tokenize(std::string_view prompt, const GenerationConfig& config) const {
  int n_bos = config.num_bos;
  if (n_bos < 0) {  // the model's rule, only at the start of a sequence
    const bool at_start = seq_.pos == 0 && !pending_;
    n_bos = at_start && tokenizer_->bos_id() >= 0 ? tokenizer_->default_num_bos() : 0;
  }
  EncodeOptions encode_options;
  encode_options.n_bos = n_bos;
  encode_options.n_eos = config.num_eos;
  encode_options.parse_special = config.parse_special;
  auto ids = tokenizer_->encode(prompt, encode_options);
  if (!ids.ok()) return ids.status().with_context("tokenizing the prompt");
  if (ids->empty()) {
    return error_status("the prompt of " + std::to_string(prompt.size()) + " bytes tokenized to no tokens");
  }
  return std::vector<int64_t>(ids->begin(), ids->end());
}

Status TextLLMRunner::prepare_sampler(const GenerationConfig& config) {
  const SamplerParams params = config.sampler_params();
  if (!sampler_) {
    auto sampler = Sampler::create(params, config.seed.value_or(seed_from_clock()));
    if (!sampler.ok()) return sampler.status();
    sampler_.emplace(std::move(*sampler));
    for (int64_t t : seq_.tokens) sampler_->accept(static_cast<int32_t>(t));
    return ok_status();
  }
  // One persistent sampler (G5): its stream carries on unless a new seed is asked for.
  if (config.seed && *config.seed != sampler_->seed()) sampler_->reset(*config.seed);
  return sampler_->set_params(params);
}

Result<std::optional<int32_t>> TextLLMRunner::prefill_tokens(std::span<const int64_t> tokens) {
  const int64_t start_pos = seq_.pos;
  const size_t start_size = seq_.tokens.size();
  auto logits = prefiller_.prefill(tokens, stop_);
  if (!logits.ok() || stop_.load(std::memory_order_acquire)) {
    // The prompt was not consumed: later tokens overwrite these positions.
    seq_.pos = start_pos;
    seq_.tokens.resize(start_size);
    if (logits.ok() || logits.status().message() == kPrefillStoppedMessage) return std::optional<int32_t>();
    return logits.status();
  }
  stats_.prompt_eval_end_ms = now_ms();
  for (int64_t t : tokens) sampler_->accept(static_cast<int32_t>(t));
  last_fed_ = static_cast<int32_t>(tokens.back());
  if (prefill_logits_observer_) prefill_logits_observer_(logits->last());
  const double t0 = times_.now_ms();
  auto next = sampler_->sample(logits->last());
  times_.sampling_ms += times_.now_ms() - t0;
  if (!next.ok()) return next.status();
  return std::optional<int32_t>(*next);
}

void TextLLMRunner::finish_stats(int64_t generated) {
  stats_.num_generated_tokens = generated;
  stats_.inference_end_ms = now_ms();
  stats_.aggregate_sampling_time_ms = static_cast<int64_t>(times_.sampling_ms);
  stats_.aggregate_model_execution_time_ms = static_cast<int64_t>(times_.execution_ms);
  if (times_.first_execution_start_ms >= 0) {
    stats_.model_execution_start_ms = static_cast<int64_t>(std::floor(times_.first_execution_start_ms));
    stats_.model_execution_end_ms = static_cast<int64_t>(std::floor(times_.last_execution_end_ms));
  }
}

Status TextLLMRunner::generate(std::string_view prompt, const GenerationConfig& config, const TokenCallback& on_piece,
                               const StatsCallback& on_stats) {
  LLMPACK_RETURN_IF_ERROR(config.validate());
  LLMPACK_RETURN_IF_ERROR(load());
  stop_.store(false, std::memory_order_release);
  stats_.reset_inference();
  times_.clear_aggregates();
  stats_.inference_start_ms = now_ms();

  std::vector<int64_t> tokens;
  if (!prompt.empty()) {
    LLMPACK_ASSIGN_OR_RETURN(tokens, tokenize(prompt, config));
  } else if (!pending_) {
    return error_status("generate: the prompt is empty and no prefill() is pending; "
                        "pass a prompt or call prefill() first");
  }
  const int64_t n_prompt = static_cast<int64_t>(tokens.size());
  // Both refusals come before any forward call: the prompt must fit (R5, R6),
  // then leave room to generate (G1).
  if (n_prompt > 0) LLMPACK_RETURN_IF_ERROR(prefiller_.check_fits(n_prompt));
  auto budget = config.resolve_max_new_tokens(limits_.context_len(), seq_.pos + n_prompt);
  if (!budget.ok()) return budget.status();
  LLMPACK_RETURN_IF_ERROR(prepare_sampler(config));
  stats_.num_prompt_tokens = n_prompt;

  const TokenCallback no_output;
  const TokenCallback& emit = config.warming ? no_output : on_piece;
  if (config.echo && !prompt.empty() && emit) emit(std::string(prompt));

  int32_t first = 0;
  int32_t prev = last_fed_;
  if (n_prompt > 0) {
    pending_.reset();  // a new prompt replaces a pending prefill's prediction
    auto next = prefill_tokens(tokens);
    if (!next.ok()) return next.status();
    if (!next->has_value()) {  // stopped during prefill (R9)
      finish_stats(0);
      if (on_stats && !config.warming) on_stats(stats_);
      return ok_status();
    }
    first = **next;
    prev = last_fed_;
  } else {
    first = *pending_;
    pending_.reset();
    stats_.prompt_eval_end_ms = stats_.inference_start_ms;
  }
  stats_.first_token_ms = now_ms();

  TextTokenGenerator generator(forwarder_, *sampler_, *tokenizer_, eos_ids_);
  auto outcome = generator.generate(first, prev, *budget, config, emit, stop_);
  if (!outcome.ok()) return outcome.status();
  // The last generated token was never forwarded: the next prompt follows the
  // last fed one. Keep it as the decoding context.
  last_fed_ = seq_.tokens.empty() ? -1 : static_cast<int32_t>(seq_.tokens.back());
  finish_stats(outcome->generated);
  if (on_stats && !config.warming) on_stats(stats_);
  return ok_status();
}

Status TextLLMRunner::prefill(std::string_view prompt, const GenerationConfig& config) {
  LLMPACK_RETURN_IF_ERROR(config.validate());
  LLMPACK_RETURN_IF_ERROR(load());
  stop_.store(false, std::memory_order_release);
  if (prompt.empty()) return error_status("prefill: expected a prompt, got an empty one");
  LLMPACK_ASSIGN_OR_RETURN(std::vector<int64_t> tokens, tokenize(prompt, config));
  LLMPACK_RETURN_IF_ERROR(prefiller_.check_fits(static_cast<int64_t>(tokens.size())));
  LLMPACK_RETURN_IF_ERROR(prepare_sampler(config));
  times_.clear_aggregates();
  auto next = prefill_tokens(tokens);
  if (!next.ok()) return next.status();
  if (!next->has_value()) return error_status(std::string(kPrefillStoppedMessage) + " before the prompt was fed");
  pending_ = **next;
  return ok_status();
}

Status TextLLMRunner::warmup(std::string_view prompt, int32_t max_new_tokens) {
  GenerationConfig config;
  config.warming = true;
  config.echo = false;
  config.max_new_tokens = max_new_tokens;
  Status status = generate(prompt, config);
  reset();
  return status.with_context("warmup");
}

void TextLLMRunner::reset() {
  seq_.clear();
  if (program_) program_->reset_cache();
  pending_.reset();
  last_fed_ = -1;
  sampler_.reset();  // the next generate seeds a new one, as a fresh runner does
  stop_.store(false, std::memory_order_release);
}

}  // namespace llmpack
