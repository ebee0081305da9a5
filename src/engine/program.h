// The contract between a package and the runner (docs/CONTRACT.md P3-P5):
// a Program of Methods. `forward` takes tokens [1, n] and a start position;
// constant methods return one published value each. The runner knows a model
// only through this interface.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/status.h"
#include "engine/kv_cache.h"

namespace llmpack {

enum class ScalarType { kInt64, kFloat32, kBool };
std::string_view scalar_type_name(ScalarType t);

// Shape and type of one input or output of a method.
struct TensorMeta {
  ScalarType dtype = ScalarType::kInt64;
  std::vector<int64_t> sizes;  // the upper bound of each dim
  // For forward's token input: true when dim 1 accepts 1..sizes[1] tokens,
  // false when it accepts exactly sizes[1].
  bool dynamic_dim1 = false;
};

struct MethodMeta {
  std::string name;
  std::vector<TensorMeta> inputs;
  std::vector<TensorMeta> outputs;
  size_t num_inputs() const { return inputs.size(); }
  size_t num_outputs() const { return outputs.size(); }
};

// The value a constant method returns.
using ConstantValue = std::variant<int64_t, bool, std::vector<int64_t>>;

// Logits written by forward: `rows` rows of `vocab_size` floats each (the last
// position only unless all positions were asked for). The view stays valid
// until the next call into the program.
struct LogitsView {
  const float* data = nullptr;
  int64_t rows = 0;
  int64_t vocab_size = 0;
  std::span<const float> row(int64_t i) const {
    return {data + i * vocab_size, static_cast<size_t>(vocab_size)};
  }
  std::span<const float> last() const { return row(rows - 1); }
};

class Program {
 public:
  virtual ~Program() = default;

  virtual std::vector<std::string> method_names() const = 0;
  virtual Result<MethodMeta> method_meta(std::string_view method) const = 0;
  // Runs a constant method (get_max_seq_len, get_eos_ids, ...).
  virtual Result<ConstantValue> execute_constant(std::string_view method) const = 0;

  // forward(tokens [1, n], start position). Rejects n beyond the token bound
  // (or, static, n != bound) before touching any state (P5).
  // `n_valid` < tokens.size() marks trailing padding of a static chunk (R4):
  // padded positions are computed but never become visible to later tokens,
  // and the logits returned are those of the last valid token.
  virtual Result<LogitsView> forward(std::span<const int64_t> tokens, int64_t start_pos,
                                     bool all_logits = false, int64_t n_valid = -1) = 0;

  // Forgets all cached positions (the next forward may start at 0).
  virtual void reset_cache() = 0;

  // Off-graph KV cache (CONTRACT C1, C7). A package whose cache lives outside
  // the graph makes caches shaped for it (capacity_rows 0: its context C;
  // more than C is an error; options.heads is set to its kv heads, or 1
  // where a q8_0 head would split a block) and, once one is bound, forward reads and writes
  // that cache, growing it as positions are written. nullptr unbinds. The
  // defaults refuse: the package keeps its cache inside the program.
  virtual Result<std::unique_ptr<KvCache>> create_kv_cache(const KvCacheOptions& options) const;
  virtual Status bind_kv_cache(KvCache* cache);
  // A hash of what makes cached keys and values valid for this program
  // (hyperparameters, tensor names, shapes and leading bytes); 0 when unknown.
  virtual uint64_t model_fingerprint() const { return 0; }
};

// Helpers to read constant methods with the expected type.
Result<int64_t> get_int_constant(const Program& program, std::string_view method);
Result<bool> get_bool_constant(const Program& program, std::string_view method);

}  // namespace llmpack
