// llama-quantize's file types ("Q4_K_M", "IQ3_M", ...) as export mixes: each
// is a base weight type plus rules that give some tensors another type (the
// output matrix more bits, attn_v / ffn_down of some layers more, attn_q /
// attn_k fewer in IQ3_XS). The rules are llama.cpp's (its quantizer's
// per-tensor choice, as of its 0.7.0 build) for dense models of the llama
// family; this runtime runs no mixture-of-experts or Falcon models, so their
// rules are left out.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/dtype.h"

namespace llmpack {

enum class LlamaFtype {
  kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ8_0,
  kQ2_K, kQ2_K_S, kQ3_K_S, kQ3_K_M, kQ3_K_L, kQ4_K_S, kQ4_K_M, kQ5_K_S, kQ5_K_M, kQ6_K,
  kIQ1_S, kIQ1_M, kIQ2_XXS, kIQ2_XS, kIQ2_S, kIQ2_M, kIQ3_XXS, kIQ3_XS, kIQ3_S, kIQ3_M, kIQ4_NL, kIQ4_XS,
};

struct LlamaFileType {
  LlamaFtype id;
  const char* name;     // llama-quantize's name, lower case ("q4_k_m")
  uint32_t file_type;   // general.file_type (llama_ftype)
  DType base;           // the type of every matrix no rule names (IQ2_S's is IQ2_XS, IQ2_M's IQ2_S)
};

// The file type llama-quantize calls `name` (lower case; its aliases q3_k,
// q4_k and q5_k are the _m mixes), or nullptr.
const LlamaFileType* find_llama_file_type(std::string_view name);

// The names that are mixes only, not also a single weight type (q2_k_s,
// q3_k_s, ..., iq3_m), comma-separated, for --dtype's help and errors.
std::string llama_mix_only_names();
bool is_llama_mix_only_name(std::string_view name);

// What the rules look at: the tensor and the model.
struct MixTensor {
  std::string_view name;  // "blk.3.attn_v.weight"
  int64_t layer = -1;     // 3; -1 outside the layers
  int64_t n_layers = 0;
  int64_t n_gqa = 1;      // query heads per key/value head
  int64_t cols = 0;       // row length, ne[0]
  bool is_output = false;    // output.weight, or the embedding of a model that ties the two
  bool has_imatrix = false;  // an importance matrix was given (IQ3_XXS, IQ4 and Q4_0 / Q5_0 rules use it)
};

// The type file type `ft` gives tensor `t`, before any fallback for rows the
// type's blocks do not fit (the exporter's, as llama-quantize's).
DType llama_mix_type(const LlamaFileType& ft, const MixTensor& t);

// The type llama-quantize writes for `want` where rows of `cols` are not
// whole blocks of it (its fallbacks: Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to
// Q8_0, Q2_K and Q3_K to Q4_0, IQ4_XS and the codebook types to IQ4_NL; F16
// where that does not fit either); `want` where they are.
DType llama_fallback_type(DType want, int64_t cols);

// The file types llama-quantize writes only with an importance matrix
// (Q2_K_S, IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M, IQ3_XXS, IQ3_XS).
bool llama_file_type_needs_imatrix(const LlamaFileType& ft);

// Whether llama-quantize refuses to write `type` for tensor `name` of file
// type `ft` (nullptr: a single type) without an importance matrix entry: the
// 1- and 2-bit codebook types, and Q2_K in Q2_K_S but for the embedding.
bool mix_needs_importance(DType type, const LlamaFileType* ft, std::string_view name);

}  // namespace llmpack
