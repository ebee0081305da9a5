// The models `llmpack bench` measures: a package file (GGUF or llama2.c,
// loaded without its tokenizer since bench feeds random token ids) or a
// synthetic model built in memory, each behind the Program it runs through.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench_bandwidth.h"
#include "core/status.h"
#include "engine/kv_cache.h"
#include "engine/llama_program.h"
#include "engine/synthetic_model.h"

namespace llmpack::cli {

// What to load: a file, or a synthetic shape and type mix.
struct BenchModelSource {
  std::string path;            // set for a file
  SyntheticShape shape;        // set for a synthetic model (path empty)
  SyntheticType type = SyntheticType::kQ4_0;
  SyntheticOptions synthetic;  // layer/vocab overrides (tests), seed
  bool is_synthetic() const { return path.empty(); }
};

// Parses "NAME:TYPE" (stories110m:q4_k_m); errors list the known names.
Result<BenchModelSource> parse_synthetic_spec(const std::string& spec);

struct BenchModel {
  std::unique_ptr<LlamaProgram> program;
  std::string filename;    // the path, or "synthetic:NAME:TYPE"
  std::string display;     // for the table: file name or "NAME (synthetic)"
  std::string type_label;  // llama-bench's file type words: "Q4_0", "Q4_K - Medium"
  std::string model_type;  // llama-bench's description: "llama 1B Q4_0"
  uint64_t size_bytes = 0; // bytes of all weights
  uint64_t n_params = 0;   // elements of all weights
  double load_ms = 0;      // opening (or building) the model until its program is ready
  bool repacked = false;   // some matrices were regrouped at load (Q5_0 / Q5_1 on x86: model/model.h)

  // The element type of the cache the tests run with.
  KvDtype kv_dtype() const { return program->transformer().cache().dtype(); }
};

// Loads with `threads` workers, a KV cache of `kv_dtype` (llama-bench's
// -ctk/-ctv) and a contract that fits the tests: for packages without
// llmpack.* keys S = B = max_seq_len and C = max_context_len.
Result<BenchModel> load_bench_model(const BenchModelSource& source, int threads, int64_t max_seq_len,
                                    int64_t max_context_len, KvDtype kv_dtype = KvDtype::kF16);

// The weight matrices decode reads in full for every token: each layer's
// seven and the output (the embedding when tied; an untied embedding gives
// only one row a token, so it is left out).
std::vector<ReadRange> decode_weight_ranges(const BenchModel& model);

// Writes a model that came from a GGUF (a synthetic one, say) to `path`, its
// metadata and tensors as they are: a package file to measure load time on.
Status save_model_gguf(const Model& model, const std::string& path);

}  // namespace llmpack::cli
