// The package contract (docs/CONTRACT.md P1, P2): what one forward call takes
// (S published, B enforced), what the cache holds (C), and the package kind.
// Read from the `llmpack.` GGUF keys, or defaulted for plain GGUFs and
// llama2.c checkpoints.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace llmpack {

class GgufFile;
struct ModelConfig;

enum class KvCacheKind { kInGraph, kOffGraph, kNone };
enum class PositionInput { kStartPos, kCachePosition };

std::string_view kv_cache_kind_name(KvCacheKind kind);
std::string_view position_input_name(PositionInput p);

struct PackageContract {
  int64_t version = 1;
  int64_t max_seq_len = 0;       // S
  int64_t max_context_len = 0;   // C
  int64_t token_bound = 0;       // B
  bool dynamic_shape = true;
  bool use_kv_cache = true;
  KvCacheKind kv_cache = KvCacheKind::kOffGraph;
  std::vector<int64_t> eos_ids;
  PositionInput position_input = PositionInput::kStartPos;
  int64_t bos_id = -1;           // from the tokenizer metadata (not a contract key)
  bool from_keys = false;        // true when the llmpack.* keys were present
};

// User caps for packages without llmpack.* keys (P2).
struct ContractDefaults {
  int64_t max_seq_len = 0;       // 0: 512
  // Caps C: a model trained for 128K positions would otherwise plan a cache
  // of gigabytes. 0: the model's own context length.
  int64_t max_context_len = 4096;
};

// The contract key names (P1).
namespace contract_keys {
inline constexpr std::string_view kVersion = "llmpack.version";
inline constexpr std::string_view kMaxSeqLen = "llmpack.max_seq_len";
inline constexpr std::string_view kMaxContextLen = "llmpack.max_context_len";
inline constexpr std::string_view kTokenBound = "llmpack.forward.token_bound";
inline constexpr std::string_view kDynamicShape = "llmpack.enable_dynamic_shape";
inline constexpr std::string_view kUseKvCache = "llmpack.use_kv_cache";
inline constexpr std::string_view kKvCache = "llmpack.kv_cache";
inline constexpr std::string_view kEosIds = "llmpack.eos_ids";
inline constexpr std::string_view kPositionInput = "llmpack.position_input";
}  // namespace contract_keys

// Defaults for a model without contract keys: dynamic shape, off-graph cache,
// S = B = defaults.max_seq_len or 512 (at most C), C = the model's context
// length capped by defaults.max_context_len.
PackageContract default_contract(const ModelConfig& config, const ContractDefaults& defaults,
                                 std::vector<int64_t> eos_ids);

// Reads the llmpack.* keys when present (else default_contract) and refuses
// contradictions (B = 0, C < S, unknown kv_cache kind) naming the keys.
Result<PackageContract> read_contract(const GgufFile& gguf, const ModelConfig& config,
                                      const ContractDefaults& defaults);

}  // namespace llmpack
