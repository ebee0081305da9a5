// A loaded package as a Program (docs/CONTRACT.md P3-P6): the Llama-family
// forward pass behind `forward`, the package contract behind the constant
// methods and method_meta.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "core/log.h"
#include "core/thread_pool.h"
#include "engine/package_contract.h"
#include "engine/program.h"
#include "engine/transformer.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace llmpack {

struct ProgramOptions {
  int cpu_threads = 0;            // 0: all cores
  ContractDefaults defaults;      // S and C for packages without llmpack.* keys
  int64_t logits_rows = 1;        // rows forward(all_logits) may return (perplexity asks for B)
  KvDtype kv_dtype = kDefaultKvDtype;  // the program's own KV cache
  // Where the pool's threads run (core/thread_placement.h; empty: wherever
  // the OS puts them). The thread that calls create() is the pool's thread 0
  // and is placed too: it should be the thread that calls forward.
  ThreadPlacement placement;
  std::optional<std::chrono::microseconds> spin;  // waiting threads' spin (unset: ThreadPool::kDefaultSpin)
  // set_this_thread_priority's level, set on the thread that calls create()
  // before the pool's threads start (they inherit it); 0 leaves it alone.
  int priority = 0;
  LogSink log = null_log_sink();
};

class LlamaProgram final : public Program {
 public:
  static Result<std::unique_ptr<LlamaProgram>> create(std::unique_ptr<Model> model,
                                                      PackageContract contract,
                                                      const ProgramOptions& options);

  std::vector<std::string> method_names() const override;
  Result<MethodMeta> method_meta(std::string_view method) const override;
  Result<ConstantValue> execute_constant(std::string_view method) const override;
  Result<LogitsView> forward(std::span<const int64_t> tokens, int64_t start_pos, bool all_logits = false,
                             int64_t n_valid = -1) override;
  void reset_cache() override {}
  Result<std::unique_ptr<KvCache>> create_kv_cache(const KvCacheOptions& options) const override;
  Status bind_kv_cache(KvCache* cache) override;
  uint64_t model_fingerprint() const override;

  const Model& model() const { return *model_; }
  const PackageContract& contract() const { return contract_; }
  const Transformer& transformer() const { return *transformer_; }
  // Forward calls add their wall time per stage to `profile` (not owned;
  // nullptr stops): `llmpack bench --profile`.
  void bind_profile(ForwardProfile* profile) { transformer_->bind_profile(profile); }
  // Forward calls add every matmul's input rows to `stats` (not owned;
  // nullptr stops): `llmpack imatrix`. Transformer::bind_activation_stats.
  Status bind_activation_stats(ActivationStats* stats) { return transformer_->bind_activation_stats(stats); }
  // The threads forward runs on (bench places them: ThreadPool::place).
  ThreadPool& thread_pool() { return *pool_; }

 private:
  LlamaProgram() = default;
  Status check_forward_input(std::span<const int64_t> tokens, int64_t start_pos, bool all_logits,
                             int64_t n_valid) const;

  std::unique_ptr<Model> model_;
  PackageContract contract_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<Transformer> transformer_;
};

// A program and the tokenizer that travels with it.
struct LoadedPackage {
  std::unique_ptr<LlamaProgram> program;
  std::unique_ptr<Tokenizer> tokenizer;
};

// Opens a GGUF package or a llama2.c checkpoint (told apart by content).
// `tokenizer_path` overrides the package's tokenizer; llama2.c checkpoints
// need one (tokenizer.bin). Errors name the file and what was wrong.
Result<LoadedPackage> load_package(const std::string& model_path, const std::string& tokenizer_path,
                                   const ProgramOptions& options);
// Loads a GGUF already parsed (tests build packages in memory).
Result<LoadedPackage> load_gguf_package(std::unique_ptr<GgufFile> gguf, const std::string& tokenizer_path,
                                        const ProgramOptions& options);

}  // namespace llmpack
