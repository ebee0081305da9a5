// What `llmpack export` is asked to write (docs/CONTRACT.md E2, E3), and the
// checks that refuse a bad combination before anything is read or written.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "engine/package_contract.h"
#include "format/llama_mix.h"

namespace llmpack {

struct ExportOptions {
  std::string checkpoint;        // GGUF, llama2.c .bin, .pt/.pth, or a Hugging Face folder
  std::string params_path;       // Meta params.json (PyTorch checkpoints without model_args)
  std::string tokenizer_path;    // tokenizer.bin/.model/.json(.gz), tiktoken or a GGUF; overrides the source's
  std::string output;            // the package (.gguf)
  int64_t max_seq_len = 128;     // S
  int64_t max_context_len = 0;   // C; 0: S
  std::string kv_cache = "off_graph";  // in_graph | off_graph | none
  bool static_shape = false;
  int64_t static_chunk = 0;      // N (static shape only); 0: unset, meaning 1
  std::string dtype;             // f32 | f16 | bf16 | q8_0 | q4_0 | q4_k_m; "": keep the source's types
  // Types named for single tensors, as llama-quantize's --output-tensor-type,
  // --token-embedding-type and --tensor-type (DTypePlan gives the precedence).
  std::string output_dtype;      // output.weight, or the embedding a model ties to it
  std::string embedding_dtype;   // token_embd.weight
  std::vector<std::string> tensor_dtypes;  // "PATTERN=TYPE": tensors whose name the regex PATTERN finds
  int64_t token_bound = 0;       // B override (legacy packages in tests); 0: derived (E3)
  std::string name;              // general.name; "": from the source
  int threads = 0;               // threads that convert rows; 0: all cores
  bool dry_run = false;          // plan every tensor's type and size, read nothing more, write nothing
  // An importance matrix (llama-imatrix's or `llmpack imatrix`'s file): the
  // types that search their scales weight each column's error by it.
  std::string imatrix;
  // --llama_mix: a --dtype that names a single type (q4_0, iq2_xs, ...) asks
  // for llama-quantize's file type of that name, its per-tensor rules
  // included, not for every matrix in the one type.
  bool llama_mix = false;
};

// A type the user named for some tensors, and how they named it (for notices).
struct TypeOverride {
  DType type = DType::kF32;
  std::string given;                            // "--output_dtype q6_k", "--tensor_dtype attn_v=q8_0"
  std::shared_ptr<const std::regex> pattern;    // --tensor_dtype's PATTERN (case-insensitive)
};

// The weight types an export writes: matrices get `matrix`, except where
// a mix (llama-quantize's file types: q4_k_m gives Q6_K to the output and to
// half the layers' attn_v / ffn_down) names another type, and where an
// override names a tensor. Overrides, strongest first, as
// llama-quantize applies its own: `embedding` for token_embd.weight;
// `output` for output.weight; the first of `tensor_rules` whose pattern the
// name holds; `output` for an embedding the model ties to its output.
struct DTypePlan {
  bool keep = true;              // --dtype absent: keep the source's types
  // llama-quantize's file type whose rules pick each matrix's type (q4_k_m,
  // iq3_m, ...; format/llama_mix.h); nullptr: `matrix` for every matrix
  // (the codebook types lift the output and embedding as their files do)
  const LlamaFileType* mix = nullptr;
  bool has_imatrix = false;      // some rules differ with importances
  DType matrix = DType::kF32;
  std::string name;              // as given ("q4_k_m")
  std::optional<TypeOverride> output, embedding;
  std::vector<TypeOverride> tensor_rules;
};

// The contract the package will carry, derived from the options.
struct PackageShape {
  int64_t max_seq_len = 0;       // S
  int64_t max_context_len = 0;   // C
  int64_t token_bound = 0;       // B
  bool dynamic_shape = true;
  KvCacheKind kv_cache = KvCacheKind::kOffGraph;
  DTypePlan dtype;
};

// Validates the options and derives S, C, B: with a KV cache, dynamic shape
// gives B = S and static shape B = N; without a KV cache every call takes the
// whole sequence, so B = S and C = S (a larger C would be unreachable).
// Errors name the option and both numbers.
Result<PackageShape> resolve_export_options(const ExportOptions& options);

// llama.cpp's general.file_type number for the plan (0 all F32, 1 F16, ...).
uint32_t gguf_file_type(const DTypePlan& plan);

}  // namespace llmpack
