#include "engine/llama_program.h"

#include <algorithm>
#include <vector>

#include "core/cpu_topology.h"
#include "core/thread_pool.h"
#include "kernels/grouped_blocks.h"

namespace llmpack {
namespace {

const char* const kConstantMethods[] = {
    "get_max_seq_len",        "get_max_context_len", "enable_dynamic_shape",
    "use_kv_cache",           "use_sdpa_with_kv_cache", "get_vocab_size",
    "get_bos_id",             "get_eos_ids",         "get_n_layers",
};

std::string n_str(int64_t v) { return std::to_string(v); }

constexpr int64_t kDefaultInitialCacheRows = 256;

}  // namespace

Result<std::unique_ptr<LlamaProgram>> LlamaProgram::create(std::unique_ptr<Model> model,
                                                           PackageContract contract,
                                                           const ProgramOptions& options) {
  std::unique_ptr<LlamaProgram> p(new LlamaProgram());
  int threads = options.cpu_threads > 0 ? options.cpu_threads : default_threads();
  if (options.priority != 0) LLMPACK_RETURN_IF_ERROR(set_this_thread_priority(options.priority));
  p->pool_ = std::make_unique<ThreadPool>(threads);
  if (options.spin) p->pool_->set_spin(*options.spin);
  if (!options.placement.empty()) {
    // place() refuses CPUs outside those the pool was created with, naming them.
    const std::string what = "placing the threads on CPUs " + cpu_list_text(options.placement.all_cpus());
    LLMPACK_RETURN_IF_ERROR(p->pool_->place(options.placement).with_context(what));
  }
  ForwardPlan plan;
  plan.max_tokens = contract.token_bound;
  // Without a KV cache every call recomputes the sequence from position 0.
  plan.cache_rows = contract.use_kv_cache ? contract.max_context_len : contract.token_bound;
  plan.logits_rows = std::clamp<int64_t>(options.logits_rows, 1, contract.token_bound);
  plan.cache_dtype = options.kv_dtype;
  // An off-graph cache starts small and grows with the sequence (C7); an
  // in-graph one is the package's fixed buffer of C rows.
  if (contract.kv_cache == KvCacheKind::kOffGraph)
    plan.initial_cache_rows = std::min<int64_t>(kDefaultInitialCacheRows, plan.cache_rows);
  p->transformer_ = std::make_unique<Transformer>(*model, plan, *p->pool_);
  p->model_ = std::move(model);
  p->contract_ = std::move(contract);
  return p;
}

std::vector<std::string> LlamaProgram::method_names() const {
  std::vector<std::string> names = {"forward"};
  for (const char* m : kConstantMethods) names.emplace_back(m);
  return names;
}

Result<MethodMeta> LlamaProgram::method_meta(std::string_view method) const {
  MethodMeta meta;
  meta.name = std::string(method);
  const int64_t b = contract_.token_bound;
  if (method == "forward") {
    TensorMeta tokens{ScalarType::kInt64, {1, b}, contract_.dynamic_shape};
    TensorMeta position{ScalarType::kInt64, {1}, false};
    if (contract_.position_input == PositionInput::kCachePosition)
      position = TensorMeta{ScalarType::kInt64, {b}, contract_.dynamic_shape};
    meta.inputs = {tokens, position};
    meta.outputs = {TensorMeta{ScalarType::kFloat32, {1, model_->config().vocab_size}, false}};
    return meta;
  }
  for (const char* m : kConstantMethods) {
    if (method != m) continue;
    const bool is_bool = method == "enable_dynamic_shape" || method == "use_kv_cache" ||
                         method == "use_sdpa_with_kv_cache";
    const int64_t n = method == "get_eos_ids" ? static_cast<int64_t>(contract_.eos_ids.size()) : 1;
    meta.outputs = {TensorMeta{is_bool ? ScalarType::kBool : ScalarType::kInt64, {n}, false}};
    return meta;
  }
  return error_status("program has no method '" + std::string(method) + "'");
}

Result<ConstantValue> LlamaProgram::execute_constant(std::string_view method) const {
  const ModelConfig& c = model_->config();
  if (method == "get_max_seq_len") return ConstantValue(contract_.max_seq_len);
  if (method == "get_max_context_len") return ConstantValue(contract_.max_context_len);
  if (method == "enable_dynamic_shape") return ConstantValue(contract_.dynamic_shape);
  if (method == "use_kv_cache") return ConstantValue(contract_.use_kv_cache);
  if (method == "use_sdpa_with_kv_cache") return ConstantValue(contract_.use_kv_cache);
  if (method == "get_vocab_size") return ConstantValue(c.vocab_size);
  if (method == "get_bos_id") return ConstantValue(contract_.bos_id);
  if (method == "get_eos_ids") return ConstantValue(contract_.eos_ids);
  if (method == "get_n_layers") return ConstantValue(c.n_layers);
  if (method == "forward") return error_status("'forward' is not a constant method");
  return error_status("program has no method '" + std::string(method) + "'");
}

Status LlamaProgram::check_forward_input(std::span<const int64_t> tokens, int64_t start_pos,
                                         bool all_logits, int64_t n_valid) const {
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t b = contract_.token_bound;
  if (n == 0) return error_status("forward: token input is empty, expected 1 to " + n_str(b) + " tokens");
  if (contract_.dynamic_shape && n > b)
    return error_status("forward: token input of " + n_str(n) + " exceeds its bound of " + n_str(b));
  if (!contract_.dynamic_shape && n != b)
    return error_status("forward: token input of " + n_str(n) + " does not match its static size of " + n_str(b));
  if (n_valid < 1 || n_valid > n)
    return error_status("forward: " + n_str(n_valid) + " valid tokens requested of " + n_str(n));
  if (start_pos < 0) return error_status("forward: position " + n_str(start_pos) + " is negative");
  if (!contract_.use_kv_cache && start_pos != 0)
    return error_status("forward: a package without KV cache takes the whole sequence from position 0, got position " +
                        n_str(start_pos));
  const int64_t rows = contract_.use_kv_cache ? transformer_->cache().capacity_rows() : transformer_->plan().cache_rows;
  if (start_pos + n_valid > rows)
    return error_status("forward: positions " + n_str(start_pos) + ".." + n_str(start_pos + n_valid - 1) +
                        " exceed the context of " + n_str(rows) + " positions");
  const int64_t vocab = model_->config().vocab_size;
  for (int64_t i = 0; i < n_valid; ++i)
    if (tokens[i] < 0 || tokens[i] >= vocab)
      return error_status("forward: token id " + n_str(tokens[i]) + " at index " + n_str(i) +
                          " is outside the vocabulary of " + n_str(vocab));
  if (all_logits && n_valid > transformer_->plan().logits_rows)
    return error_status("forward: " + n_str(n_valid) + " rows of logits requested, the program was loaded for " +
                        n_str(transformer_->plan().logits_rows));
  return ok_status();
}

Result<LogitsView> LlamaProgram::forward(std::span<const int64_t> tokens, int64_t start_pos,
                                         bool all_logits, int64_t n_valid) {
  if (n_valid < 0) n_valid = static_cast<int64_t>(tokens.size());
  LLMPACK_RETURN_IF_ERROR(check_forward_input(tokens, start_pos, all_logits, n_valid));
  // Padding of a static chunk (R4) is never computed: it could not change
  // any valid token's result, and skipping it keeps the cache clean.
  const int64_t n_logits = all_logits ? n_valid : 1;
  LLMPACK_RETURN_IF_ERROR(transformer_->prepare_cache(start_pos + n_valid));
  auto logits = transformer_->forward(tokens.first(n_valid), start_pos, n_logits);
  return LogitsView{logits.data(), n_logits, model_->config().vocab_size};
}

Result<std::unique_ptr<KvCache>> LlamaProgram::create_kv_cache(const KvCacheOptions& options) const {
  if (contract_.kv_cache != KvCacheKind::kOffGraph)
    return error_status("the package's KV cache is " + std::string(kv_cache_kind_name(contract_.kv_cache)) +
                        ", not off_graph: re-export it with --kv_cache off_graph for a runner-owned cache");
  const int64_t c = transformer_->plan().cache_rows;
  KvCacheOptions o = options;
  if (o.capacity_rows == 0) o.capacity_rows = c;
  if (o.capacity_rows > c)
    return error_status("KV cache capacity of " + n_str(o.capacity_rows) + " rows exceeds the package's context of " +
                        n_str(c) + " positions");
  const ModelConfig& m = model_->config();
  o.heads = kv_cache_heads(o.dtype, m);
  return KvCache::create(m.n_layers, m.kv_dim(), o);
}

Status LlamaProgram::bind_kv_cache(KvCache* cache) {
  if (cache == nullptr) {
    transformer_->bind_cache(nullptr);
    return ok_status();
  }
  if (contract_.kv_cache != KvCacheKind::kOffGraph) return create_kv_cache({}).status();
  const ModelConfig& c = model_->config();
  if (cache->n_layers() != c.n_layers || cache->kv_dim() != c.kv_dim() ||
      cache->capacity_rows() > transformer_->plan().cache_rows)
    return error_status("KV cache of " + n_str(cache->n_layers()) + " layers x " + n_str(cache->kv_dim()) + " x " +
                        n_str(cache->capacity_rows()) + " rows does not fit this program (" + n_str(c.n_layers) +
                        " x " + n_str(c.kv_dim()) + " x at most " + n_str(transformer_->plan().cache_rows) + ")");
  if (cache->heads() != 1 && cache->heads() != c.n_kv_heads)
    return error_status("KV cache rows stored as " + n_str(cache->heads()) + " heads do not fit this program's " +
                        n_str(c.n_kv_heads) + " kv heads (expected " + n_str(c.n_kv_heads) + " or 1)");
  transformer_->bind_cache(cache);
  return ok_status();
}

namespace {

// Up to the first 256 bytes of a tensor as the file holds them: a matrix
// regrouped at load (a memory-only type) is ungrouped row by row again, so
// the fingerprint does not depend on the kernel path that loaded it.
std::vector<uint8_t> leading_file_bytes(const GgufTensorInfo& t) {
  constexpr uint64_t kLeading = 256;
  const uint64_t n = std::min<uint64_t>(t.n_bytes, kLeading);
  if (!t.data) return {};
  if (!dtype_is_memory_only(t.dtype)) return std::vector<uint8_t>(t.data, t.data + n);
  const int64_t stride = row_bytes(*dtype_info(kernels::plain_type(t.dtype)), t.ne[0]);
  std::vector<uint8_t> out;
  for (int64_t offset = 0; static_cast<uint64_t>(offset) < n; offset += stride) {
    out.resize(static_cast<size_t>(offset + stride));
    kernels::ungroup_row(t.dtype, t.data + offset, t.ne[0], out.data() + offset);
  }
  out.resize(static_cast<size_t>(n));
  return out;
}

}  // namespace

uint64_t LlamaProgram::model_fingerprint() const {
  const ModelConfig& c = model_->config();
  const int64_t dims[] = {c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim, c.vocab_size,
                          c.rope_dim};
  uint64_t h = fnv1a64(dims, sizeof(dims));
  h = fnv1a64(&c.rope_theta, sizeof(c.rope_theta), h);
  // Scaling mixed in only when present, so files saved before it existed stay valid.
  if (c.rope_freq_scale != 1.0f) h = fnv1a64(&c.rope_freq_scale, sizeof(c.rope_freq_scale), h);
  if (c.rope_attn_scale != 1.0f) h = fnv1a64(&c.rope_attn_scale, sizeof(c.rope_attn_scale), h);
  if (const ModelConfig::Yarn& y = c.rope_yarn; y.ext_factor != 0.0f) {
    const double yarn[] = {y.ext_factor, static_cast<double>(y.original_context), y.beta_fast, y.beta_slow};
    h = fnv1a64(yarn, sizeof(yarn), h);
  }
  // Names, shapes and the leading bytes of every weight: a fine-tune of the
  // same architecture differs there, and hashing whole weights would cost a
  // full read of the file.
  auto mix_bytes = [&h](const void* data, uint64_t n) {
    if (data) h = fnv1a64(data, static_cast<size_t>(std::min<uint64_t>(n, 256)), h);
  };
  if (const GgufFile* g = model_->gguf()) {
    for (const GgufTensorInfo& t : g->tensors()) {
      h = fnv1a64(t.name.data(), t.name.size(), h);
      h = fnv1a64(t.ne.data(), t.ne.size() * sizeof(int64_t), h);
      const std::vector<uint8_t> leading = leading_file_bytes(t);
      mix_bytes(leading.empty() ? nullptr : leading.data(), leading.size());
    }
  } else {
    const ModelWeights& w = model_->weights();
    const kernels::WeightMatrix* ms[] = {&w.token_embedding, &w.output, &w.layers.back().wq, &w.layers.back().w_down};
    for (const auto* m : ms) mix_bytes(m->data, static_cast<uint64_t>(m->cols) * 2);
  }
  return h;
}

}  // namespace llmpack
