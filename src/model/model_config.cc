#include "model/model_config.h"

#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

#include "format/gguf.h"

namespace llmpack {
namespace {

struct ArchEntry {
  const char* name;
  Architecture arch;
  kernels::RopeStyle rope_style;
  bool qkv_bias;
  bool qk_norm;
};

// llama rotates adjacent pairs in GGUF's layout; qwen2/qwen3 rotate halves.
constexpr ArchEntry kArchitectures[] = {
    {"llama", Architecture::kLlama, kernels::RopeStyle::kAdjacentPairs, false, false},
    {"qwen2", Architecture::kQwen2, kernels::RopeStyle::kHalves, true, false},
    {"qwen3", Architecture::kQwen3, kernels::RopeStyle::kHalves, false, true},
};

Status wrong_type(const GgufFile& gguf, const std::string& key, const char* expected) {
  return error_status("metadata key '" + key + "' is " + gguf_value_type(*gguf.find(key)) + ", expected " +
                      expected);
}

// An integer key: nullopt when absent; an error when present as anything else
// (a string or an array read as "absent" would silently give the default).
Result<std::optional<int64_t>> optional_int(const GgufFile& gguf, const std::string& key) {
  if (!gguf.find(key)) return std::optional<int64_t>{};
  auto v = gguf.get_int(key);
  if (!v) return wrong_type(gguf, key, "an integer");
  return v;
}

Result<int64_t> required_positive(const GgufFile& gguf, const std::string& key) {
  LLMPACK_ASSIGN_OR_RETURN(const std::optional<int64_t> v, optional_int(gguf, key));
  if (!v) return error_status("missing metadata key '" + key + "'");
  if (*v <= 0 || *v > (int64_t{1} << 32))
    return error_status("metadata key '" + key + "' is " + std::to_string(*v) +
                        ", expected a positive size");
  return *v;
}

// A number key, `fallback` when absent; finite and at least 0 (above 0 when
// `positive`): a negative RoPE base or RMS epsilon turns every logit into NaN.
Result<double> number_key(const GgufFile& gguf, const std::string& key, double fallback, bool positive) {
  if (!gguf.find(key)) return fallback;
  auto v = gguf.get_float(key);
  if (!v) return wrong_type(gguf, key, "a number");
  if (!std::isfinite(static_cast<float>(*v)) || *v < 0 || (positive && *v == 0)) {  // held as float
    char shown[32];
    std::snprintf(shown, sizeof shown, "%g", *v);
    return error_status("metadata key '" + key + "' is " + shown + ", expected a " +
                        (positive ? "positive" : "non-negative") + " finite number");
  }
  return *v;
}

std::string shown_number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

// YaRN as llama.cpp runs it: frequencies scaled by 1 / `rope.scaling.factor`
// blended with the unscaled ones by a ramp between the pairs that turn
// `yarn_beta_fast` (32) and `yarn_beta_slow` (1) times over
// `rope.scaling.original_context_length` positions (else the context
// length), times `yarn_ext_factor` (1); q and k scaled by 1 + 0.1 ln(factor).
// DeepSeek's `yarn_log_multiplier` (its mscale_all_dim) is refused, and
// `yarn_attn_factor`, which llama.cpp overrides whenever YaRN is on.
Status read_yarn(const GgufFile& gguf, const std::string& p, double factor, ModelConfig* c) {
  ModelConfig::Yarn& y = c->rope_yarn;
  LLMPACK_ASSIGN_OR_RETURN(const double ext, number_key(gguf, p + "rope.scaling.yarn_ext_factor", 1.0, false));
  LLMPACK_ASSIGN_OR_RETURN(const double fast, number_key(gguf, p + "rope.scaling.yarn_beta_fast", 32.0, true));
  LLMPACK_ASSIGN_OR_RETURN(const double slow, number_key(gguf, p + "rope.scaling.yarn_beta_slow", 1.0, true));
  LLMPACK_ASSIGN_OR_RETURN(const double log_mul, number_key(gguf, p + "rope.scaling.yarn_log_multiplier", 0.0, false));
  LLMPACK_ASSIGN_OR_RETURN(const std::optional<int64_t> original,
                           optional_int(gguf, p + "rope.scaling.original_context_length"));
  if (log_mul != 0.0)
    return error_status("RoPE scaling 'yarn' with " + p + "rope.scaling.yarn_log_multiplier " + shown_number(log_mul) +
                        " (DeepSeek's mscale_all_dim) is not supported");
  if (gguf.find(p + "rope.scaling.yarn_attn_factor"))
    return error_status("RoPE scaling 'yarn' with " + p + "rope.scaling.yarn_attn_factor is not supported " +
                        "(llama.cpp replaces it by YaRN's own scale)");
  y.original_context = original.value_or(c->context_length);
  if (y.original_context <= 0)
    return error_status(p + "rope.scaling.original_context_length is " + std::to_string(y.original_context) +
                        ", expected a positive number of positions");
  y.ext_factor = static_cast<float>(ext);
  y.beta_fast = static_cast<float>(fast);
  y.beta_slow = static_cast<float>(slow);
  c->rope_freq_scale = static_cast<float>(1.0 / factor);
  if (ext != 0.0 && factor > 1.0) c->rope_attn_scale *= static_cast<float>(1.0 + 0.1 * std::log(factor));
  return ok_status();
}

// RoPE scaling as llama.cpp's GGUFs give it: `rope.scaling.type` (absent
// or "linear": the frequencies divided by `rope.scaling.factor`, or by the
// older `rope.scale_linear`; "none": unscaled; "yarn": see read_yarn), and
// `rope.scaling.attn_factor` on q and k. Other schemes (longrope, dynamic
// NTK) are refused rather than run unscaled, unless their factor is 1.
// Llama 3's scaling is a tensor, rope_freqs.weight (Model binds it).
Status read_rope_scaling(const GgufFile& gguf, const std::string& p, ModelConfig* c) {
  std::string type = "linear";
  if (gguf.find(p + "rope.scaling.type")) {
    auto t = gguf.get_string(p + "rope.scaling.type");
    if (!t) return wrong_type(gguf, p + "rope.scaling.type", "a string");
    type = *t;
  }
  LLMPACK_ASSIGN_OR_RETURN(const double attn_factor, number_key(gguf, p + "rope.scaling.attn_factor", 1.0, true));
  c->rope_attn_scale = static_cast<float>(attn_factor);  // llama.cpp applies it whatever the type
  if (type == "none") return ok_status();
  const std::string factor_key =
      gguf.find(p + "rope.scaling.factor") ? p + "rope.scaling.factor" : p + "rope.scale_linear";
  LLMPACK_ASSIGN_OR_RETURN(const double factor, number_key(gguf, factor_key, 1.0, true));
  if (type == "yarn") return read_yarn(gguf, p, factor, c);
  if (type != "linear" && factor != 1.0)
    return error_status("RoPE scaling '" + type + "' (" + factor_key + " " + shown_number(factor) +
                        ") is not supported: linear, yarn and Llama 3's rope_freqs are");
  if (type == "linear") c->rope_freq_scale = static_cast<float>(1.0 / factor);
  return ok_status();
}

}  // namespace

std::string supported_architectures() {
  std::string out;
  for (const auto& a : kArchitectures) {
    if (!out.empty()) out += ", ";
    out += a.name;
  }
  return out;
}

Result<ModelConfig> config_from_gguf(const GgufFile& gguf) {
  ModelConfig c;
  auto arch = gguf.get_string("general.architecture");
  if (!arch) return error_status("missing metadata key 'general.architecture'");
  const ArchEntry* entry = nullptr;
  for (const auto& a : kArchitectures)
    if (*arch == a.name) entry = &a;
  if (!entry)
    return error_status("unsupported architecture '" + *arch + "' (supported: " +
                        supported_architectures() + ")");
  c.arch = entry->arch;
  c.arch_name = *arch;
  c.rope_style = entry->rope_style;
  c.has_qkv_bias = entry->qkv_bias;
  c.has_qk_norm = entry->qk_norm;
  c.name = gguf.get_string("general.name").value_or("");
  const std::string p = *arch + ".";

  LLMPACK_ASSIGN_OR_RETURN(c.dim, required_positive(gguf, p + "embedding_length"));
  LLMPACK_ASSIGN_OR_RETURN(c.hidden_dim, required_positive(gguf, p + "feed_forward_length"));
  LLMPACK_ASSIGN_OR_RETURN(c.n_layers, required_positive(gguf, p + "block_count"));
  LLMPACK_ASSIGN_OR_RETURN(c.n_heads, required_positive(gguf, p + "attention.head_count"));
  LLMPACK_ASSIGN_OR_RETURN(const std::optional<int64_t> kv_heads, optional_int(gguf, p + "attention.head_count_kv"));
  LLMPACK_ASSIGN_OR_RETURN(const std::optional<int64_t> key_length, optional_int(gguf, p + "attention.key_length"));
  LLMPACK_ASSIGN_OR_RETURN(const std::optional<int64_t> context, optional_int(gguf, p + "context_length"));
  LLMPACK_ASSIGN_OR_RETURN(const std::optional<int64_t> rope_dim, optional_int(gguf, p + "rope.dimension_count"));
  c.n_kv_heads = kv_heads.value_or(c.n_heads);
  if (c.n_kv_heads <= 0 || c.n_heads % c.n_kv_heads != 0)
    return error_status(p + "attention.head_count_kv is " + std::to_string(c.n_kv_heads) +
                        ", expected a positive divisor of head_count " + std::to_string(c.n_heads));
  if (!key_length && c.dim % c.n_heads != 0)
    return error_status(p + "embedding_length " + std::to_string(c.dim) +
                        " is not divisible by head_count " + std::to_string(c.n_heads));
  c.head_dim = key_length.value_or(c.dim / c.n_heads);
  if (c.head_dim <= 0 || c.head_dim % 2 != 0)
    return error_status("head dimension " + std::to_string(c.head_dim) + " must be positive and even");
  c.context_length = context.value_or(2048);
  if (c.context_length <= 0)
    return error_status(p + "context_length must be positive, found " + std::to_string(c.context_length));
  LLMPACK_ASSIGN_OR_RETURN(const double eps, number_key(gguf, p + "attention.layer_norm_rms_epsilon", 1e-5, false));
  LLMPACK_ASSIGN_OR_RETURN(const double theta, number_key(gguf, p + "rope.freq_base", 10000.0, true));
  c.norm_eps = static_cast<float>(eps);
  c.rope_theta = static_cast<float>(theta);
  LLMPACK_RETURN_IF_ERROR(read_rope_scaling(gguf, p, &c));
  c.rope_dim = rope_dim.value_or(c.head_dim);
  if (c.rope_dim <= 0 || c.rope_dim > c.head_dim || c.rope_dim % 2 != 0)
    return error_status(p + "rope.dimension_count is " + std::to_string(c.rope_dim) +
                        ", expected an even number in 2.." + std::to_string(c.head_dim));
  // The vocabulary size comes from the embedding tensor (checked by the loader).
  if (const auto* emb = gguf.find_tensor("token_embd.weight"); emb && emb->ne.size() == 2)
    c.vocab_size = emb->ne[1];
  return c;
}

}  // namespace llmpack
