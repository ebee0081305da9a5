// Random-weight models in the shapes of real ones, built in memory for
// `llmpack bench`: speed does not depend on the weight values, so a
// stories110M or Llama-3.2-1B shape can be measured without downloading it.
// The GGUF is laid out once and its weights written in place (one copy of the
// weights in memory), quantized in parallel on the caller's thread pool.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "core/thread_pool.h"
#include "model/model.h"

namespace llmpack {

// A real model's hyperparameters (no weights).
struct SyntheticShape {
  std::string name;            // "llama-3.2-1b"
  std::string arch = "llama";  // general.architecture: llama | qwen3
  int64_t dim = 0;
  int64_t hidden_dim = 0;
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;        // dim / n_heads unless the model says otherwise (qwen3)
  int64_t vocab_size = 0;
  int64_t context_length = 2048;
  float rope_theta = 10000.0f;
  bool tied_output = true;     // output.weight shares token_embd.weight
};

// Weight types: f32, f16, bf16, every matrix in that type; the others are
// llama-quantize's file types of those names (format/llama_mix.h), each
// tensor in the type llama-quantize gives it, so that the model is laid out
// as the file a user downloads: q4_0 is Q4_0 with a Q6_K output matrix (the
// token embedding when tied), q4_k_m Q4_K with Q6_K for the output and for
// attn_v / ffn_down of about half the layers, iq2_xs IQ2_XS with Q2_K or Q4_K
// attn_v and a Q5_K output, and so on. The rules that depend on an importance
// matrix take the branch of the files llama-quantize makes: with one for the
// types it writes only with one (the IQ1/IQ2 files, IQ3_XXS, IQ3_XS, Q2_K_S),
// without for the others. Matrices whose rows are not whole blocks fall back
// as llama-quantize's do (Q6_K -> Q8_0, Q4_K -> Q5_0, Q5_K -> Q5_1, Q2_K and
// Q3_K -> Q4_0, IQ4_XS and the codebook types -> IQ4_NL). Norms stay F32.
enum class SyntheticType {
  kF32, kF16, kBF16, kQ8_0, kQ4_0, kQ4_K_M, kQ5_K_M, kQ3_K_M, kIQ4_XS, kIQ3_XXS, kIQ3_S, kIQ2_XXS, kIQ2_XS, kIQ1_M,
  kQ4_1, kQ5_0, kQ5_1, kQ2_K, kQ2_K_S, kQ3_K_S, kQ3_K_L, kQ4_K_S, kQ5_K_S, kQ6_K, kIQ4_NL, kIQ1_S, kIQ2_S, kIQ2_M,
  kIQ3_XS, kIQ3_M,
};

// The shapes known by name: stories110m, smollm2-135m, qwen2.5-0.5b, qwen3-0.6b,
// llama-3.2-1b.
const std::vector<SyntheticShape>& synthetic_shapes();
Result<SyntheticShape> find_synthetic_shape(std::string_view name);
Result<SyntheticType> parse_synthetic_type(std::string_view name);
std::string_view synthetic_type_name(SyntheticType type);  // "q4_k_m"
// llama.cpp's general.file_type number of the mix (15 for q4_k_m), which the
// synthetic package declares, so that it is described as a downloaded one is.
uint32_t synthetic_file_type(SyntheticType type);

// Which type a weight matrix gets under a mix. `kind` is the GGUF tensor name
// without "blk.N." and ".weight" ("token_embd", "output", "attn_v", ...);
// `n_gqa` the query heads a key/value head serves.
DType synthetic_matrix_type(SyntheticType type, std::string_view kind, int64_t layer, int64_t n_layers,
                            int64_t cols, bool tied_output, int64_t n_gqa = 1);

struct SyntheticOptions {
  int64_t n_layers = 0;    // 0: the shape's (tests use 1 or 2 to stay fast)
  int64_t vocab_size = 0;  // 0: the shape's
  uint64_t seed = 1;
};

// Builds the model: GGUF metadata as a converter would write it (no
// tokenizer), uniform random matrices of standard deviation 0.02, norms near 1.
Result<std::unique_ptr<Model>> build_synthetic_model(const SyntheticShape& shape, SyntheticType type,
                                                     const SyntheticOptions& options, ThreadPool& pool);

}  // namespace llmpack
