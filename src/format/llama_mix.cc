#include "format/llama_mix.h"

#include <initializer_list>

namespace llmpack {
// Named, not anonymous: a unity build puts this file beside others whose
// anonymous namespaces hold names such as kFileTypes.
namespace llama_mix_rules {

using F = LlamaFtype;

constexpr LlamaFileType kFileTypes[] = {
    {F::kQ4_0, "q4_0", 2, DType::kQ4_0},           {F::kQ4_1, "q4_1", 3, DType::kQ4_1},
    {F::kQ5_0, "q5_0", 8, DType::kQ5_0},           {F::kQ5_1, "q5_1", 9, DType::kQ5_1},
    {F::kQ8_0, "q8_0", 7, DType::kQ8_0},           {F::kQ2_K, "q2_k", 10, DType::kQ2_K},
    {F::kQ2_K_S, "q2_k_s", 21, DType::kQ2_K},      {F::kQ3_K_S, "q3_k_s", 11, DType::kQ3_K},
    {F::kQ3_K_M, "q3_k_m", 12, DType::kQ3_K},      {F::kQ3_K_L, "q3_k_l", 13, DType::kQ3_K},
    {F::kQ4_K_S, "q4_k_s", 14, DType::kQ4_K},      {F::kQ4_K_M, "q4_k_m", 15, DType::kQ4_K},
    {F::kQ5_K_S, "q5_k_s", 16, DType::kQ5_K},      {F::kQ5_K_M, "q5_k_m", 17, DType::kQ5_K},
    {F::kQ6_K, "q6_k", 18, DType::kQ6_K},          {F::kIQ1_S, "iq1_s", 24, DType::kIQ1_S},
    {F::kIQ1_M, "iq1_m", 31, DType::kIQ1_M},       {F::kIQ2_XXS, "iq2_xxs", 19, DType::kIQ2_XXS},
    {F::kIQ2_XS, "iq2_xs", 20, DType::kIQ2_XS},    {F::kIQ2_S, "iq2_s", 28, DType::kIQ2_XS},
    {F::kIQ2_M, "iq2_m", 29, DType::kIQ2_S},       {F::kIQ3_XXS, "iq3_xxs", 23, DType::kIQ3_XXS},
    {F::kIQ3_XS, "iq3_xs", 22, DType::kIQ3_S},     {F::kIQ3_S, "iq3_s", 26, DType::kIQ3_S},
    {F::kIQ3_M, "iq3_m", 27, DType::kIQ3_S},       {F::kIQ4_NL, "iq4_nl", 25, DType::kIQ4_NL},
    {F::kIQ4_XS, "iq4_xs", 30, DType::kIQ4_XS},
};

// Names that are file types and not also a single weight type.
constexpr const char* kMixOnly[] = {"q2_k_s", "q3_k_s", "q3_k_m", "q3_k_l", "q4_k_s", "q4_k_m",
                                    "q5_k_s", "q5_k_m", "iq2_m",  "iq3_xs", "iq3_m"};

bool is_one_of(F id, std::initializer_list<F> ids) {
  for (F f : ids)
    if (f == id) return true;
  return false;
}

bool has(std::string_view name, std::string_view part) { return name.find(part) != std::string_view::npos; }

// The layers of attn_v / ffn_down the _M mixes give more bits: the first and
// last eighth and every third between.
bool more_bits(int64_t layer, int64_t n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

// The output matrix: Q8_0 where its rows are not whole blocks of the base
// type, Q5_K in the 1- and 2-bit codebook files and IQ3_XXS, else Q6_K (Q8_0
// files keep Q8_0).
DType output_type(const LlamaFileType& ft, const MixTensor& t) {
  if (t.cols % dtype_info(ft.base)->block_elems != 0) return DType::kQ8_0;
  if (is_one_of(ft.id, {F::kIQ2_XXS, F::kIQ2_XS, F::kIQ3_XXS, F::kIQ1_S, F::kIQ2_S, F::kIQ2_M, F::kIQ1_M}))
    return DType::kQ5_K;
  return ft.base == DType::kQ8_0 ? DType::kQ8_0 : DType::kQ6_K;
}

// The embedding of a model with its own output matrix: read one row a token,
// with no importances, so the codebook files lift it.
DType embedding_type(const LlamaFileType& ft) {
  if (is_one_of(ft.id, {F::kIQ2_XXS, F::kIQ2_XS, F::kIQ1_S, F::kIQ1_M})) return DType::kQ2_K;
  if (is_one_of(ft.id, {F::kIQ2_S, F::kIQ2_M, F::kIQ3_XXS})) return DType::kIQ3_S;
  return ft.base;
}

// The 1- and 2-bit codebook files, whose layers have rules of their own.
bool is_low_bit_file(F id) {
  return is_one_of(id, {F::kIQ2_XXS, F::kIQ2_XS, F::kIQ1_S, F::kIQ2_S, F::kIQ2_M, F::kIQ1_M});
}

// The 1- and 2-bit codebook files' layers: attn_v, the first eighth of
// ffn_down and attn_output lifted.
DType low_bit_layer_type(const LlamaFileType& ft, const MixTensor& t) {
  const bool two_s = is_one_of(ft.id, {F::kIQ2_S, F::kIQ2_M});
  const DType lifted = two_s ? DType::kIQ3_S : DType::kQ2_K;
  if (has(t.name, "attn_v.weight")) return t.n_gqa >= 4 ? DType::kQ4_K : lifted;
  if (has(t.name, "ffn_down")) return t.layer < t.n_layers / 8 ? lifted : ft.base;
  if (has(t.name, "attn_output.weight")) {
    if (is_one_of(ft.id, {F::kIQ1_S, F::kIQ1_M})) return DType::kIQ2_XXS;
    if (two_s) return DType::kIQ3_S;
  }
  return ft.base;
}

DType attn_v_type(const LlamaFileType& ft, const MixTensor& t) {
  const bool gqa4 = t.n_gqa >= 4;
  switch (ft.id) {
    case F::kQ2_K: return gqa4 ? DType::kQ4_K : DType::kQ3_K;
    case F::kQ2_K_S: return gqa4 ? DType::kQ4_K : ft.base;
    case F::kIQ3_XXS: return gqa4 ? DType::kQ4_K : !t.has_imatrix ? DType::kIQ3_S : DType::kIQ3_XXS;
    case F::kIQ3_XS:
    case F::kIQ3_S: return gqa4 ? DType::kQ4_K : ft.base;
    case F::kIQ3_M: return DType::kQ4_K;
    case F::kQ3_K_M: return t.layer < 2 ? DType::kQ5_K : DType::kQ4_K;
    case F::kQ3_K_L: return DType::kQ5_K;
    case F::kIQ4_NL:
    case F::kIQ4_XS: return gqa4 ? DType::kQ5_K : ft.base;
    case F::kQ4_K_M:
    case F::kQ5_K_M: return more_bits(t.layer, t.n_layers) ? DType::kQ6_K : ft.base;
    case F::kQ4_K_S: return t.layer < 4 ? DType::kQ5_K : ft.base;
    default: return ft.base;
  }
}

DType ffn_down_type(const LlamaFileType& ft, const MixTensor& t) {
  const bool first_eighth = t.layer < t.n_layers / 8;
  switch (ft.id) {
    case F::kQ2_K: return DType::kQ3_K;
    case F::kQ2_K_S: return first_eighth ? DType::kQ4_K : ft.base;
    case F::kIQ3_XXS: return t.has_imatrix ? ft.base : first_eighth ? DType::kQ4_K : DType::kQ3_K;
    case F::kQ3_K_M: return t.layer < t.n_layers / 16 ? DType::kQ5_K : DType::kQ4_K;
    case F::kIQ3_M: return first_eighth ? DType::kQ4_K : ft.base;
    case F::kQ3_K_L: return DType::kQ5_K;
    case F::kQ4_K_M:
    case F::kQ5_K_M: return more_bits(t.layer, t.n_layers) ? DType::kQ6_K : ft.base;
    case F::kIQ4_NL:
    case F::kIQ4_XS: return first_eighth && !t.has_imatrix ? DType::kQ5_K : ft.base;
    case F::kQ4_K_S: return first_eighth ? DType::kQ5_K : ft.base;
    // with importances only, so that a file without one stays as it was
    case F::kQ4_0: return first_eighth && t.has_imatrix ? DType::kQ4_1 : ft.base;
    case F::kQ5_0: return first_eighth && t.has_imatrix ? DType::kQ5_1 : ft.base;
    default: return ft.base;
  }
}

DType attn_output_type(const LlamaFileType& ft) {
  switch (ft.id) {
    case F::kQ2_K: return DType::kQ3_K;
    case F::kIQ3_XXS: return DType::kIQ3_S;
    case F::kQ3_K_M:
    case F::kIQ3_M: return DType::kQ4_K;
    case F::kQ3_K_L: return DType::kQ5_K;
    default: return ft.base;
  }
}

// A fused q/k/v matrix (Phi-3's attn_qkv).
DType attn_qkv_type(const LlamaFileType& ft) {
  switch (ft.id) {
    case F::kQ3_K_M:
    case F::kQ3_K_L:
    case F::kIQ3_M: return DType::kQ4_K;
    case F::kQ4_K_M: return DType::kQ5_K;
    case F::kQ5_K_M: return DType::kQ6_K;
    default: return ft.base;
  }
}

}  // namespace llama_mix_rules

namespace lmr = llama_mix_rules;

const LlamaFileType* find_llama_file_type(std::string_view name) {
  if (name == "q3_k") name = "q3_k_m";
  else if (name == "q4_k") name = "q4_k_m";
  else if (name == "q5_k") name = "q5_k_m";
  for (const LlamaFileType& ft : lmr::kFileTypes)
    if (name == ft.name) return &ft;
  return nullptr;
}

bool is_llama_mix_only_name(std::string_view name) {
  for (const char* n : lmr::kMixOnly)
    if (name == n) return true;
  return false;
}

std::string llama_mix_only_names() {
  std::string out;
  for (const char* n : lmr::kMixOnly) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

DType llama_mix_type(const LlamaFileType& ft, const MixTensor& t) {
  if (t.is_output) return lmr::output_type(ft, t);
  if (t.name == "token_embd.weight") return lmr::embedding_type(ft);
  if (lmr::is_low_bit_file(ft.id)) return lmr::low_bit_layer_type(ft, t);
  if (lmr::has(t.name, "attn_v.weight")) return lmr::attn_v_type(ft, t);
  if (lmr::has(t.name, "attn_k.weight") || lmr::has(t.name, "attn_q.weight")) {
    if (ft.id == lmr::F::kIQ3_XS) return DType::kIQ3_XXS;
    if (ft.id == lmr::F::kIQ3_XXS) return DType::kIQ2_S;
    return ft.base;
  }
  if (lmr::has(t.name, "ffn_down")) return lmr::ffn_down_type(ft, t);
  if (lmr::has(t.name, "attn_output.weight")) return lmr::attn_output_type(ft);
  if (lmr::has(t.name, "attn_qkv.weight")) return lmr::attn_qkv_type(ft);
  if ((lmr::has(t.name, "ffn_gate") || lmr::has(t.name, "ffn_up")) && ft.id == lmr::F::kIQ3_XS &&
      t.layer >= t.n_layers / 8 && t.layer < 7 * t.n_layers / 8)
    return DType::kIQ3_XXS;
  return ft.base;
}

DType llama_fallback_type(DType want, int64_t cols) {
  const auto fits = [cols](DType t) { return cols % dtype_info(t)->block_elems == 0; };
  if (fits(want)) return want;
  DType second = DType::kF16;
  switch (want) {
    case DType::kQ2_K:
    case DType::kQ3_K: second = DType::kQ4_0; break;
    case DType::kQ4_K: second = DType::kQ5_0; break;
    case DType::kQ5_K: second = DType::kQ5_1; break;
    case DType::kQ6_K: second = DType::kQ8_0; break;
    case DType::kIQ4_XS:
    case DType::kIQ1_S:
    case DType::kIQ1_M:
    case DType::kIQ2_XXS:
    case DType::kIQ2_XS:
    case DType::kIQ2_S:
    case DType::kIQ3_XXS:
    case DType::kIQ3_S: second = DType::kIQ4_NL; break;
    default: break;
  }
  return fits(second) ? second : DType::kF16;
}

bool llama_file_type_needs_imatrix(const LlamaFileType& ft) {
  using lmr::F;
  return lmr::is_low_bit_file(ft.id) || lmr::is_one_of(ft.id, {F::kQ2_K_S, F::kIQ3_XXS, F::kIQ3_XS});
}

bool mix_needs_importance(DType type, const LlamaFileType* ft, std::string_view name) {
  if (type == DType::kIQ2_XXS || type == DType::kIQ2_XS || type == DType::kIQ2_S || type == DType::kIQ1_S ||
      type == DType::kIQ1_M)
    return true;
  return ft != nullptr && ft->id == lmr::F::kQ2_K_S && type == DType::kQ2_K && name != "token_embd.weight";
}

}  // namespace llmpack
