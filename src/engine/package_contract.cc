#include "engine/package_contract.h"

#include <algorithm>

#include "format/gguf.h"
#include "model/model_config.h"

namespace llmpack {

std::string_view kv_cache_kind_name(KvCacheKind kind) {
  switch (kind) {
    case KvCacheKind::kInGraph: return "in_graph";
    case KvCacheKind::kOffGraph: return "off_graph";
    case KvCacheKind::kNone: return "none";
  }
  return "?";
}

std::string_view position_input_name(PositionInput p) {
  return p == PositionInput::kStartPos ? "start_pos" : "cache_position";
}

PackageContract default_contract(const ModelConfig& config, const ContractDefaults& defaults,
                                 std::vector<int64_t> eos_ids) {
  PackageContract c;
  c.max_context_len = config.context_length;
  if (defaults.max_context_len > 0) c.max_context_len = std::min(c.max_context_len, defaults.max_context_len);
  c.max_seq_len = defaults.max_seq_len > 0 ? defaults.max_seq_len : 512;
  c.max_seq_len = std::min(c.max_seq_len, c.max_context_len);
  c.token_bound = c.max_seq_len;
  c.eos_ids = std::move(eos_ids);
  return c;
}

namespace {

std::vector<int64_t> tokenizer_eos(const GgufFile& gguf) {
  std::vector<int64_t> ids;
  if (auto eos = gguf.get_int("tokenizer.ggml.eos_token_id"); eos && *eos >= 0) ids.push_back(*eos);
  if (auto eot = gguf.get_int("tokenizer.ggml.eot_token_id"); eot && *eot >= 0 &&
      std::find(ids.begin(), ids.end(), *eot) == ids.end())
    ids.push_back(*eot);
  return ids;
}

std::string key(std::string_view k) { return std::string(k); }

}  // namespace

Result<PackageContract> read_contract(const GgufFile& gguf, const ModelConfig& config,
                                      const ContractDefaults& defaults) {
  namespace k = contract_keys;
  if (!gguf.find(k::kVersion)) return default_contract(config, defaults, tokenizer_eos(gguf));

  PackageContract c;
  c.from_keys = true;
  c.version = gguf.get_int(k::kVersion).value_or(0);
  if (c.version != 1)
    return error_status(key(k::kVersion) + " is " + std::to_string(c.version) + ", this llmpack reads version 1");
  auto s = gguf.get_int(k::kMaxSeqLen);
  auto ctx = gguf.get_int(k::kMaxContextLen);
  auto b = gguf.get_int(k::kTokenBound);
  if (!s || !ctx || !b)
    return error_status("package is missing one of " + key(k::kMaxSeqLen) + ", " + key(k::kMaxContextLen) +
                        ", " + key(k::kTokenBound));
  c.max_seq_len = *s;
  c.max_context_len = *ctx;
  c.token_bound = *b;
  if (c.max_seq_len <= 0) return error_status(key(k::kMaxSeqLen) + " must be positive, found " + std::to_string(*s));
  if (c.token_bound <= 0)
    return error_status(key(k::kTokenBound) + " must be positive, found " + std::to_string(*b));
  if (c.max_context_len < c.max_seq_len)
    return error_status(key(k::kMaxContextLen) + " (" + std::to_string(*ctx) + ") is below " +
                        key(k::kMaxSeqLen) + " (" + std::to_string(*s) + ")");
  if (c.token_bound > c.max_context_len)
    return error_status(key(k::kTokenBound) + " (" + std::to_string(*b) + ") exceeds " +
                        key(k::kMaxContextLen) + " (" + std::to_string(*ctx) + ")");
  c.dynamic_shape = gguf.get_bool(k::kDynamicShape).value_or(true);
  c.use_kv_cache = gguf.get_bool(k::kUseKvCache).value_or(true);
  const std::string kind = gguf.get_string(k::kKvCache).value_or(c.use_kv_cache ? "off_graph" : "none");
  if (kind == "in_graph") c.kv_cache = KvCacheKind::kInGraph;
  else if (kind == "off_graph") c.kv_cache = KvCacheKind::kOffGraph;
  else if (kind == "none") c.kv_cache = KvCacheKind::kNone;
  else
    return error_status(key(k::kKvCache) + " is '" + kind + "', expected in_graph, off_graph or none");
  if ((c.kv_cache == KvCacheKind::kNone) == c.use_kv_cache)
    return error_status(key(k::kUseKvCache) + " and " + key(k::kKvCache) + " ('" + kind + "') contradict each other");
  const std::string pos = gguf.get_string(k::kPositionInput).value_or("start_pos");
  if (pos == "start_pos") c.position_input = PositionInput::kStartPos;
  else if (pos == "cache_position") c.position_input = PositionInput::kCachePosition;
  else return error_status(key(k::kPositionInput) + " is '" + pos + "', expected start_pos or cache_position");
  if (auto ids = gguf.get_int_array(k::kEosIds)) c.eos_ids = *ids;
  else c.eos_ids = tokenizer_eos(gguf);
  return c;
}

}  // namespace llmpack
