// A model read from any supported checkpoint (E1), already mapped onto the
// GGUF names and shapes the engine binds (src/model/model.cc): token_embd,
// blk.N.attn_q, ..., output_norm, optional output (absent: tied). Tensor
// bytes are borrowed from the source file, which the source keeps open.
#pragma once

#include <memory>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "format/gguf.h"

namespace llmpack {

struct SourceTensor {
  std::string name;                 // GGUF name ("blk.0.attn_q.weight")
  DType dtype = DType::kF32;        // F32/F16/BF16, or any GGUF type (re-packaging)
  std::vector<int64_t> ne;          // GGUF order: ne[0] is the row length
  std::span<const uint8_t> bytes;
  // > 0: rows are in Hugging Face rotate_half order for this many heads and
  // go back to adjacent pairs (per head, row 2*i+j <- row j*(hs/2)+i).
  int64_t unpermute_heads = 0;
};

struct SourceHyperparameters {
  std::string arch = "llama";       // llama | qwen2 | qwen3
  int64_t dim = 0;
  int64_t hidden_dim = 0;
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t vocab_size = 0;           // rows of token_embd
  int64_t context_length = 0;       // trained positions (0: unknown)
  double norm_eps = 1e-5;
  double rope_theta = 10000.0;
  double rope_linear_factor = 1.0;  // linear RoPE scaling (HF rope_scaling type "linear")
  // YaRN (HF rope_scaling type "yarn"), written as llama.cpp's rope.scaling.* keys; factor 0: none.
  struct Yarn {
    double factor = 0.0;
    int64_t original_context = 0;
    double attn_factor = 1.0;         // rope.scaling.attn_factor: HF's attention_factor / (1 + 0.1 ln factor)
    double beta_fast = 32.0;
    double beta_slow = 1.0;
  } yarn;
};

// Tokenizer metadata to write (tokenizer.* GGUF keys), and what it says.
struct TokenizerMetadata {
  std::vector<std::pair<std::string, GgufValue>> keys;
  int64_t vocab_size = 0;
  int64_t bos_id = -1;
  int64_t eos_id = -1;
  std::string description;          // "SentencePiece tok512.model (512 pieces)"
};

struct ModelSource {
  std::string kind;                 // "GGUF", "llama2.c", "PyTorch", "Hugging Face"
  std::string name;                 // general.name
  SourceHyperparameters hp;
  std::vector<SourceTensor> tensors;
  // GGUF sources: every metadata key to carry over (llmpack.* dropped).
  std::vector<std::pair<std::string, GgufValue>> metadata;
  std::optional<TokenizerMetadata> tokenizer;
  std::optional<std::string> chat_template;
  std::vector<int64_t> eos_ids;     // end-of-sequence ids the model config names (HF)
  std::string tokenizer_file;       // a tokenizer found beside the weights (HF tokenizer.model)
  std::string tokenizer_json;       // HF tokenizer.json (byte-level BPE)
  std::vector<std::string> notices;
  std::deque<std::vector<uint8_t>> owned;  // bytes made here (rope_freqs)
  std::vector<std::shared_ptr<void>> keep_alive;  // the open source files

  const SourceTensor* find(std::string_view name) const;
};

// Opens `checkpoint`, telling the kind apart by content: a folder is a
// Hugging Face model, "GGUF" a GGUF file, "PK\3\4" a PyTorch zip, anything
// else a llama2.c .bin. `params_path` is Meta's params.json.
Result<ModelSource> open_model_source(const std::string& checkpoint, const std::string& params_path);

Result<ModelSource> open_gguf_source(const std::string& path);
Result<ModelSource> open_llama2c_source(const std::string& path);
Result<ModelSource> open_pytorch_source(const std::string& path, const std::string& params_path);
Result<ModelSource> open_hf_source(const std::string& dir);

// rope_theta and norm_eps: finite, the first positive, the second not negative.
Status check_source_hyperparameters(const SourceHyperparameters& h);
// Checks that the tensors the engine binds are all there with the shapes the
// hyperparameters give, naming the first that is not.
Status check_source_tensors(const ModelSource& source);

// Tokenizer metadata from tokenizer.bin (llama2.c), a SentencePiece .model,
// a GGUF (its tokenizer.* keys), an HF tokenizer.json(.gz) or a tiktoken file,
// told apart by content.
Result<TokenizerMetadata> read_tokenizer_metadata(const std::string& path);

}  // namespace llmpack
