#include "runner/forwarder.h"

#include <algorithm>
#include <string>
#include <type_traits>
#include <variant>

namespace llmpack {
namespace {

bool has_method(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

Result<int64_t> read_int(const Program& program, std::string_view name) {
  auto value = program.execute_constant(name);
  if (!value.ok()) return value.status();
  if (const auto* i = std::get_if<int64_t>(&*value)) return *i;
  if (const auto* b = std::get_if<bool>(&*value)) return static_cast<int64_t>(*b);
  return error_status(std::string(name) + ": expected an integer constant, got a list");
}

Result<bool> read_bool(const Program& program, std::string_view name) {
  auto value = read_int(program, name);
  if (!value.ok()) return value.status();
  return *value != 0;
}

}  // namespace

int64_t ModelLimits::prefill_chunk() const {
  if (!dynamic_shape) return token_bound;  // static [1, B]: exactly B per call
  return std::min(max_seq_len, token_bound);
}

int64_t ModelLimits::context_len() const {
  return use_kv_cache ? max_context_len : std::min(max_context_len, token_bound + 1);
}

std::string ModelLimits::describe() const {
  return "S " + std::to_string(max_seq_len) + ", C " + std::to_string(max_context_len) + ", B " +
         std::to_string(token_bound) + (dynamic_shape ? " dynamic" : " static") +
         (use_kv_cache ? ", KV cache" : ", no KV cache");
}

Result<ModelLimits> read_model_limits(const Program& program) {
  const std::vector<std::string> names = program.method_names();
  if (!has_method(names, "forward")) return error_status("the program has no 'forward' method");
  if (!has_method(names, "get_max_seq_len")) {
    return error_status("the program has no 'get_max_seq_len' constant method");
  }
  ModelLimits limits;
  auto meta = program.method_meta("forward");
  if (!meta.ok()) return meta.status().with_context("reading forward's method meta");
  if (meta->inputs.empty() || meta->inputs[0].sizes.size() != 2) {
    return error_status("forward: expected a token input of shape [1, n], found " +
                        std::to_string(meta->inputs.size()) + " inputs" +
                        (meta->inputs.empty() ? std::string()
                                              : " and a first input of rank " +
                                                    std::to_string(meta->inputs[0].sizes.size())));
  }
  limits.token_bound = meta->inputs[0].sizes[1];
  limits.dynamic_shape = meta->inputs[0].dynamic_dim1;
  if (limits.token_bound < 1) {
    return error_status("forward: expected a token bound >= 1, found " + std::to_string(limits.token_bound));
  }
  LLMPACK_ASSIGN_OR_RETURN(limits.max_seq_len, read_int(program, "get_max_seq_len"));
  limits.max_context_len = limits.max_seq_len;
  if (has_method(names, "get_max_context_len")) {
    LLMPACK_ASSIGN_OR_RETURN(limits.max_context_len, read_int(program, "get_max_context_len"));
  }
  if (limits.max_seq_len < 1 || limits.max_context_len < 2) {
    return error_status("expected get_max_seq_len >= 1 and get_max_context_len >= 2, found " +
                        std::to_string(limits.max_seq_len) + " and " + std::to_string(limits.max_context_len));
  }
  if (has_method(names, "use_kv_cache")) {
    LLMPACK_ASSIGN_OR_RETURN(limits.use_kv_cache, read_bool(program, "use_kv_cache"));
  }
  if (has_method(names, "get_vocab_size")) {
    LLMPACK_ASSIGN_OR_RETURN(limits.vocab_size, read_int(program, "get_vocab_size"));
  }
  if (has_method(names, "get_eos_ids")) {
    auto eos = program.execute_constant("get_eos_ids");
    if (!eos.ok()) return eos.status();
    if (const auto* list = std::get_if<std::vector<int64_t>>(&*eos)) {
      limits.eos_ids = *list;
    } else if (const auto* one = std::get_if<int64_t>(&*eos)) {
      limits.eos_ids = {*one};
    } else {
      return error_status("get_eos_ids: expected a list of token ids, got a bool");
    }
  }
  return limits;
}

Result<LogitsView> Forwarder::step(std::span<const int64_t> tokens) {
  const auto n = static_cast<int64_t>(tokens.size());
  if (program_ == nullptr) return error_status("forward: no program");
  if (n < 1 || n > limits_.token_bound) {
    return error_status("internal: a forward step takes 1.." + std::to_string(limits_.token_bound) +
                        " tokens, got " + std::to_string(n));
  }
  int64_t start_pos = seq_.pos;
  input_.clear();
  if (!limits_.use_kv_cache) {
    start_pos = 0;
    input_.assign(seq_.tokens.begin(), seq_.tokens.end());
  }
  input_.insert(input_.end(), tokens.begin(), tokens.end());
  const auto n_valid = static_cast<int64_t>(input_.size());
  if (n_valid > limits_.token_bound) {
    return error_status("forward: the sequence of " + std::to_string(n_valid) +
                        " tokens exceeds the token bound " + std::to_string(limits_.token_bound) +
                        " of a package without KV cache");
  }
  bool padded = false;
  if (!limits_.dynamic_shape && n_valid < limits_.token_bound) {
    input_.resize(limits_.token_bound, input_.back());  // padding is never attended to
    padded = true;
  }
  const double t0 = times_.now_ms();
  auto logits = program_->forward(input_, start_pos, /*all_logits=*/false, padded ? n_valid : -1);
  const double t1 = times_.now_ms();
  if (times_.first_execution_start_ms < 0) times_.first_execution_start_ms = t0;
  times_.last_execution_end_ms = t1;
  times_.execution_ms += t1 - t0;
  if (!logits.ok()) return logits.status();
  if (logits->rows < 1 || logits->data == nullptr) {
    return error_status("forward returned no logits");
  }
  seq_.tokens.insert(seq_.tokens.end(), tokens.begin(), tokens.end());
  seq_.pos += n;
  return logits;
}

}  // namespace llmpack
