#include "engine/synthetic_model.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <span>

#include "core/half.h"
#include "format/gguf.h"
#include "format/llama_mix.h"
#include "kernels/iq_blocks.h"
#include "kernels/quant_blocks.h"
#include "kernels/quantize.h"

namespace llmpack {
namespace {

constexpr int64_t kQkK = 256;  // K-quant super-block
constexpr float kWeightStddev = 0.02f;

SyntheticShape shape(std::string name, std::string arch, int64_t dim, int64_t hidden, int64_t layers,
                     int64_t heads, int64_t kv_heads, int64_t head_dim, int64_t vocab, float theta, bool tied,
                     int64_t context) {
  SyntheticShape s;
  s.name = std::move(name);
  s.arch = std::move(arch);
  s.dim = dim;
  s.hidden_dim = hidden;
  s.n_layers = layers;
  s.n_heads = heads;
  s.n_kv_heads = kv_heads;
  s.head_dim = head_dim;
  s.vocab_size = vocab;
  s.rope_theta = theta;
  s.tied_output = tied;
  s.context_length = context;
  return s;
}

struct TypeName {
  SyntheticType type;
  std::string_view name;  // llama-quantize's name of the file type (f32, f16, bf16: every matrix in it)
};
constexpr TypeName kTypes[] = {
    {SyntheticType::kF32, "f32"},         {SyntheticType::kF16, "f16"},         {SyntheticType::kBF16, "bf16"},
    {SyntheticType::kQ8_0, "q8_0"},       {SyntheticType::kQ4_0, "q4_0"},       {SyntheticType::kQ4_1, "q4_1"},
    {SyntheticType::kQ5_0, "q5_0"},       {SyntheticType::kQ5_1, "q5_1"},       {SyntheticType::kQ2_K, "q2_k"},
    {SyntheticType::kQ2_K_S, "q2_k_s"},   {SyntheticType::kQ3_K_S, "q3_k_s"},   {SyntheticType::kQ3_K_M, "q3_k_m"},
    {SyntheticType::kQ3_K_L, "q3_k_l"},   {SyntheticType::kQ4_K_S, "q4_k_s"},   {SyntheticType::kQ4_K_M, "q4_k_m"},
    {SyntheticType::kQ5_K_S, "q5_k_s"},   {SyntheticType::kQ5_K_M, "q5_k_m"},   {SyntheticType::kQ6_K, "q6_k"},
    {SyntheticType::kIQ4_NL, "iq4_nl"},   {SyntheticType::kIQ4_XS, "iq4_xs"},   {SyntheticType::kIQ3_M, "iq3_m"},
    {SyntheticType::kIQ3_S, "iq3_s"},     {SyntheticType::kIQ3_XS, "iq3_xs"},   {SyntheticType::kIQ3_XXS, "iq3_xxs"},
    {SyntheticType::kIQ2_M, "iq2_m"},     {SyntheticType::kIQ2_S, "iq2_s"},     {SyntheticType::kIQ2_XS, "iq2_xs"},
    {SyntheticType::kIQ2_XXS, "iq2_xxs"}, {SyntheticType::kIQ1_M, "iq1_m"},     {SyntheticType::kIQ1_S, "iq1_s"},
};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The float types, written whole in their type; the rest are llama-quantize's file types.
std::optional<DType> float_type(SyntheticType type) {
  switch (type) {
    case SyntheticType::kF32: return DType::kF32;
    case SyntheticType::kF16: return DType::kF16;
    case SyntheticType::kBF16: return DType::kBF16;
    default: return std::nullopt;
  }
}

// One tensor of the synthetic GGUF, in file order.
struct TensorPlan {
  std::string name;
  DType dtype = DType::kF32;
  int64_t rows = 1;   // 1 for vectors
  int64_t cols = 0;
  bool is_norm = false;
  uint64_t bytes() const { return static_cast<uint64_t>(rows * row_bytes(*dtype_info(dtype), cols)); }
};

std::vector<TensorPlan> plan_tensors(const SyntheticShape& s, SyntheticType type, int64_t n_layers) {
  std::vector<TensorPlan> plan;
  const int64_t q = s.n_heads * s.head_dim, kv = s.n_kv_heads * s.head_dim;
  auto matrix = [&](const std::string& name, std::string_view kind, int64_t layer, int64_t rows, int64_t cols) {
    const DType t = synthetic_matrix_type(type, kind, layer, n_layers, cols, s.tied_output, s.n_heads / s.n_kv_heads);
    plan.push_back({name, t, rows, cols, false});
  };
  auto norm = [&](const std::string& name, int64_t n) { plan.push_back({name, DType::kF32, 1, n, true}); };
  matrix("token_embd.weight", "token_embd", -1, s.vocab_size, s.dim);
  for (int64_t i = 0; i < n_layers; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    norm(p + "attn_norm.weight", s.dim);
    matrix(p + "attn_q.weight", "attn_q", i, q, s.dim);
    matrix(p + "attn_k.weight", "attn_k", i, kv, s.dim);
    matrix(p + "attn_v.weight", "attn_v", i, kv, s.dim);
    if (s.arch == "qwen2") {  // q, k and v biases, random as the weights
      plan.push_back({p + "attn_q.bias", DType::kF32, 1, q, false});
      plan.push_back({p + "attn_k.bias", DType::kF32, 1, kv, false});
      plan.push_back({p + "attn_v.bias", DType::kF32, 1, kv, false});
    }
    if (s.arch == "qwen3") {
      norm(p + "attn_q_norm.weight", s.head_dim);
      norm(p + "attn_k_norm.weight", s.head_dim);
    }
    matrix(p + "attn_output.weight", "attn_output", i, s.dim, q);
    norm(p + "ffn_norm.weight", s.dim);
    matrix(p + "ffn_gate.weight", "ffn_gate", i, s.hidden_dim, s.dim);
    matrix(p + "ffn_up.weight", "ffn_up", i, s.hidden_dim, s.dim);
    matrix(p + "ffn_down.weight", "ffn_down", i, s.dim, s.hidden_dim);
  }
  norm("output_norm.weight", s.dim);
  if (!s.tied_output) matrix("output.weight", "output", -1, s.vocab_size, s.dim);
  return plan;
}

void write_metadata(GgufWriter& w, const SyntheticShape& s, SyntheticType type, int64_t n_layers) {
  const std::string a = s.arch + ".";
  w.set_string("general.architecture", s.arch);
  w.set_string("general.name", "synthetic " + s.name + " " + std::string(synthetic_type_name(type)));
  w.set_u32("general.file_type", synthetic_file_type(type));
  w.set_u32(a + "context_length", static_cast<uint32_t>(s.context_length));
  w.set_u32(a + "embedding_length", static_cast<uint32_t>(s.dim));
  w.set_u32(a + "block_count", static_cast<uint32_t>(n_layers));
  w.set_u32(a + "feed_forward_length", static_cast<uint32_t>(s.hidden_dim));
  w.set_u32(a + "attention.head_count", static_cast<uint32_t>(s.n_heads));
  w.set_u32(a + "attention.head_count_kv", static_cast<uint32_t>(s.n_kv_heads));
  w.set_u32(a + "attention.key_length", static_cast<uint32_t>(s.head_dim));
  w.set_u32(a + "attention.value_length", static_cast<uint32_t>(s.head_dim));
  w.set_f32(a + "attention.layer_norm_rms_epsilon", 1e-5f);
  w.set_f32(a + "rope.freq_base", s.rope_theta);
}

// splitmix64: a cheap generator whose every state is independent of the
// others, so each row seeds its own and rows fill in any order on any thread.
struct SplitMix {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

// n values uniform in [mean - a, mean + a], a = stddev * sqrt(3).
void random_row(SplitMix& rng, float* out, int64_t n, float mean, float stddev) {
  const float a = stddev * 1.7320508f, scale = 2.0f * a / 4294967296.0f;
  int64_t i = 0;
  for (; i + 1 < n; i += 2) {
    const uint64_t r = rng.next();
    out[i] = mean - a + scale * static_cast<float>(static_cast<uint32_t>(r));
    out[i + 1] = mean - a + scale * static_cast<float>(static_cast<uint32_t>(r >> 32));
  }
  if (i < n) out[i] = mean - a + scale * static_cast<float>(static_cast<uint32_t>(rng.next()));
}

void random_bytes(SplitMix& rng, uint8_t* out, size_t n) {
  for (size_t i = 0; i < n; i += 8) {
    const uint64_t r = rng.next();
    std::memcpy(out + i, &r, std::min<size_t>(8, n - i));
  }
}

// The low-bit types as random blocks too, their f16 scales set so that the
// weights' spread is about kWeightStddev: Q2_K w = d sc q - dmin m (sc, m in
// 0..15, q in 0..3: sd(sc q) about 12, dmin = 1.5 d centres the mean); Q3_K
// w = d (sc - 32) (q - 4) (sd 18.5 and 2.3); IQ4 w = d (scale - 32) v with v
// the grid's values (rms 67.4; IQ4_NL has no sub-block scale); IQ2_XXS w =
// d (0.5 + s) / 4 m (s in 0..15: rms 9.23; codebook magnitudes m: rms 23.1),
// (IQ2_XS and IQ2_S alike), IQ3_XXS w = d (0.5 + s) / 2 m (m: rms 30.8), IQ1_M and
// IQ1_S w = d (2 s + 1) (g +/- 1/8) (s in 0..7: rms 9.22; g + delta: rms 0.78),
// IQ1_M's d in the top nibbles of its scales.
// IQ1_M's f16 super-block scale, a nibble in the top 4 bits of each of its 4
// uint16 scales.
void put_iq1m_d(uint8_t* block, float d) {
  const uint16_t h = f32_to_f16(d);
  uint8_t* scales = block + offsetof(kernels::BlockIQ1_M, scales);
  for (int n = 0; n < 4; ++n) {
    uint16_t sc;
    std::memcpy(&sc, scales + 2 * n, 2);
    sc = static_cast<uint16_t>((sc & 0x0FFF) | (((h >> (4 * n)) & 15) << 12));
    std::memcpy(scales + 2 * n, &sc, 2);
  }
}

void random_low_bit_row(DType dtype, SplitMix& rng, int64_t cols, uint8_t* dst) {
  const auto info = *dtype_info(dtype);
  const int64_t n_blocks = cols / info.block_elems;
  random_bytes(rng, dst, static_cast<size_t>(n_blocks * info.block_bytes));
  for (int64_t b = 0; b < n_blocks; ++b) {
    uint8_t* p = dst + b * info.block_bytes;
    const auto put = [&](size_t offset, float v) {
      const uint16_t h = f32_to_f16(v);
      std::memcpy(p + offset, &h, 2);
    };
    switch (dtype) {
      case DType::kQ2_K:
        put(offsetof(kernels::BlockQ2_K, d), kWeightStddev / 12.0f);
        put(offsetof(kernels::BlockQ2_K, dmin), 1.5f * kWeightStddev / 12.0f);
        break;
      case DType::kQ3_K: put(offsetof(kernels::BlockQ3_K, d), kWeightStddev / (18.5f * 2.3f)); break;
      case DType::kIQ4_XS: put(offsetof(kernels::BlockIQ4_XS, d), kWeightStddev / (18.5f * 67.4f)); break;
      case DType::kIQ2_XXS: put(offsetof(kernels::BlockIQ2_XXS, d), kWeightStddev / (9.23f / 4 * 23.1f)); break;
      case DType::kIQ2_XS: put(offsetof(kernels::BlockIQ2_XS, d), kWeightStddev / (9.23f / 4 * 23.1f)); break;
      case DType::kIQ2_S: put(offsetof(kernels::BlockIQ2_S, d), kWeightStddev / (9.23f / 4 * 23.1f)); break;
      case DType::kIQ1_S: put(offsetof(kernels::BlockIQ1_S, d), kWeightStddev / (9.22f * 0.78f)); break;
      case DType::kIQ3_XXS: put(offsetof(kernels::BlockIQ3_XXS, d), kWeightStddev / (9.23f / 2 * 30.8f)); break;
      case DType::kIQ3_S: put(offsetof(kernels::BlockIQ3_S, d), kWeightStddev / (18.47f * 9.22f)); break;
      case DType::kIQ1_M: put_iq1m_d(p, kWeightStddev / (9.22f * 0.78f)); break;
      default: put(offsetof(kernels::BlockIQ4_NL, d), kWeightStddev / 67.4f); break;
    }
  }
}

// K-quant rows written as random blocks: the quantizers' scale search costs
// about a microsecond per weight (minutes for a 1B model), and speed does not
// depend on the values. Scales are chosen so the weights' spread is about
// kWeightStddev around zero, as with the other types.
void random_k_quant_row(DType dtype, SplitMix& rng, int64_t cols, uint8_t* dst) {
  const int64_t n_blocks = cols / kQkK;
  if (dtype == DType::kQ4_K) {
    auto* blocks = reinterpret_cast<kernels::BlockQ4_K*>(dst);
    for (int64_t b = 0; b < n_blocks; ++b) {
      random_bytes(rng, reinterpret_cast<uint8_t*>(&blocks[b]), sizeof(kernels::BlockQ4_K));
      // w = d * sc * q - dmin * m with sc, m in 0..63, q in 0..15: sd(sc * q)
      // is about 233 and dmin = 7.5 d centres the mean on zero.
      const float d = kWeightStddev / 233.0f;
      blocks[b].d = f32_to_f16(d);
      blocks[b].dmin = f32_to_f16(7.5f * d);
    }
    return;
  }
  if (dtype == DType::kQ5_K) {
    auto* blocks = reinterpret_cast<kernels::BlockQ5_K*>(dst);
    for (int64_t b = 0; b < n_blocks; ++b) {
      random_bytes(rng, reinterpret_cast<uint8_t*>(&blocks[b]), sizeof(kernels::BlockQ5_K));
      // as Q4_K with q in 0..31: sd(sc * q) about 442, dmin = 15.5 d
      const float d = kWeightStddev / 442.0f;
      blocks[b].d = f32_to_f16(d);
      blocks[b].dmin = f32_to_f16(15.5f * d);
    }
    return;
  }
  if (dtype == DType::kQ6_K) {
    auto* blocks = reinterpret_cast<kernels::BlockQ6_K*>(dst);
    for (int64_t b = 0; b < n_blocks; ++b) {
      random_bytes(rng, reinterpret_cast<uint8_t*>(&blocks[b]), sizeof(kernels::BlockQ6_K));
      // w = d * scale * (q - 32), q in 0..63 (sd 18.5), scales kept in -16..15 (sd 9.2).
      for (auto& sc : blocks[b].scales) sc = static_cast<int8_t>((sc & 31) - 16);
      blocks[b].d = f32_to_f16(kWeightStddev / (18.5f * 9.2f));
    }
    return;
  }
  random_low_bit_row(dtype, rng, cols, dst);
}

bool is_random_block_type(DType t) {
  return t == DType::kQ2_K || t == DType::kQ3_K || t == DType::kQ4_K || t == DType::kQ5_K || t == DType::kQ6_K ||
         t == DType::kIQ4_NL || t == DType::kIQ4_XS || t == DType::kIQ3_XXS || t == DType::kIQ2_XXS ||
         t == DType::kIQ2_XS || t == DType::kIQ3_S || t == DType::kIQ1_M || t == DType::kIQ2_S || t == DType::kIQ1_S;
}

// Writes one tensor's rows in parallel: random f32 values, quantized per row
// (or random blocks: is_random_block_type).
Status fill_tensor(const TensorPlan& t, uint64_t seed, std::span<uint8_t> out, ThreadPool& pool) {
  if (out.size() != t.bytes())
    return error_status("synthetic tensor '" + t.name + "': " + std::to_string(out.size()) +
                        " bytes laid out, expected " + std::to_string(t.bytes()));
  const int64_t rb = row_bytes(*dtype_info(t.dtype), t.cols);
  std::atomic<bool> failed{false};
  pool.parallel_for(t.rows, [&](int, int64_t begin, int64_t end) {
    std::vector<float> row(static_cast<size_t>(t.cols));
    for (int64_t r = begin; r < end; ++r) {
      SplitMix rng{seed * 0x100000001B3ull + static_cast<uint64_t>(r)};
      uint8_t* dst = out.data() + r * rb;
      if (is_random_block_type(t.dtype)) {
        random_k_quant_row(t.dtype, rng, t.cols, dst);
        continue;
      }
      random_row(rng, row.data(), t.cols, t.is_norm ? 1.0f : 0.0f, t.is_norm ? 0.05f : kWeightStddev);
      if (t.dtype == DType::kF32) std::memcpy(dst, row.data(), static_cast<size_t>(rb));
      else if (kernels::quantize_row(t.dtype, row.data(), t.cols, dst) != static_cast<size_t>(rb))
        failed = true;
    }
  }, 16);
  if (failed) return error_status("synthetic tensor '" + t.name + "': cannot write type " +
                                  std::string(dtype_name(t.dtype)));
  return ok_status();
}

// Zeroed bytes that cost no memory until written: calloc of a large block
// maps fresh zero pages, and the writer only reads them.
struct CallocBuffer {
  explicit CallocBuffer(size_t n) : data(static_cast<uint8_t*>(std::calloc(n ? n : 1, 1))) {}
  ~CallocBuffer() { std::free(data); }
  CallocBuffer(const CallocBuffer&) = delete;
  CallocBuffer& operator=(const CallocBuffer&) = delete;
  uint8_t* data;
};

Status check_shape(const SyntheticShape& s, int64_t n_layers) {
  if (s.dim <= 0 || s.hidden_dim <= 0 || n_layers <= 0 || s.n_heads <= 0 || s.n_kv_heads <= 0 ||
      s.head_dim <= 0 || s.vocab_size <= 0 || s.n_heads % s.n_kv_heads != 0 || s.head_dim % 2 != 0)
    return error_status("synthetic shape '" + s.name + "' has a zero size or heads that do not divide");
  if (s.dim % 32 != 0 || s.hidden_dim % 32 != 0 || (s.n_heads * s.head_dim) % 32 != 0)
    return error_status("synthetic shape '" + s.name + "': widths must be multiples of 32 (dim " +
                        std::to_string(s.dim) + ", ffn " + std::to_string(s.hidden_dim) + ")");
  return ok_status();
}

}  // namespace

const std::vector<SyntheticShape>& synthetic_shapes() {
  // The real models' published configurations. stories110M is tied: its
  // llama2.c checkpoint shares the classifier, and the peers' GGUF sizes in
  // docs/PERFORMANCE.md (109.6M parameters) count one vocabulary matrix.
  static const std::vector<SyntheticShape> shapes = {
      shape("stories110m", "llama", 768, 2048, 12, 12, 12, 64, 32000, 10000.0f, true, 1024),
      shape("smollm2-135m", "llama", 576, 1536, 30, 9, 3, 64, 49152, 100000.0f, true, 8192),
      shape("qwen2.5-0.5b", "qwen2", 896, 4864, 24, 14, 2, 64, 151936, 1000000.0f, true, 32768),
      shape("qwen3-0.6b", "qwen3", 1024, 3072, 28, 16, 8, 128, 151936, 1000000.0f, true, 40960),
      shape("llama-3.2-1b", "llama", 2048, 8192, 16, 32, 8, 64, 128256, 500000.0f, true, 131072),
  };
  return shapes;
}

Result<SyntheticShape> find_synthetic_shape(std::string_view name) {
  const std::string key = lower(name);
  std::string known;
  for (const auto& s : synthetic_shapes()) {
    if (s.name == key) return s;
    known += (known.empty() ? "" : ", ") + s.name;
  }
  return error_status("unknown synthetic model '" + std::string(name) + "' (known: " + known + ")");
}

Result<SyntheticType> parse_synthetic_type(std::string_view name) {
  const std::string key = lower(name);
  std::string known;
  for (const auto& t : kTypes) {
    if (t.name == key) return t.type;
    known += (known.empty() ? "" : ", ") + std::string(t.name);
  }
  return error_status("unknown weight type '" + std::string(name) + "' (known: " + known + ")");
}

std::string_view synthetic_type_name(SyntheticType type) {
  for (const auto& t : kTypes)
    if (t.type == type) return t.name;
  return "?";
}

uint32_t synthetic_file_type(SyntheticType type) {
  if (type == SyntheticType::kF32) return 0;
  if (type == SyntheticType::kF16) return 1;
  if (type == SyntheticType::kBF16) return 32;
  const LlamaFileType* ft = find_llama_file_type(synthetic_type_name(type));
  return ft != nullptr ? ft->file_type : 0;
}

DType synthetic_matrix_type(SyntheticType type, std::string_view kind, int64_t layer, int64_t n_layers,
                            int64_t cols, bool tied_output, int64_t n_gqa) {
  if (auto f = float_type(type)) return *f;
  const LlamaFileType* ft = find_llama_file_type(synthetic_type_name(type));
  if (ft == nullptr) return DType::kF32;  // every quantized type is one (kTypes)
  const std::string name =
      layer < 0 ? std::string(kind) + ".weight" : "blk." + std::to_string(layer) + "." + std::string(kind) + ".weight";
  MixTensor m;
  m.name = name, m.layer = layer, m.n_layers = n_layers, m.n_gqa = n_gqa, m.cols = cols;
  m.is_output = kind == "output" || (kind == "token_embd" && tied_output);
  m.has_imatrix = llama_file_type_needs_imatrix(*ft);
  return llama_fallback_type(llama_mix_type(*ft, m), cols);
}

Result<std::unique_ptr<Model>> build_synthetic_model(const SyntheticShape& shape_in, SyntheticType type,
                                                     const SyntheticOptions& options, ThreadPool& pool) {
  SyntheticShape s = shape_in;
  if (options.vocab_size > 0) s.vocab_size = options.vocab_size;
  const int64_t n_layers = options.n_layers > 0 ? options.n_layers : s.n_layers;
  LLMPACK_RETURN_IF_ERROR(check_shape(s, n_layers));
  const std::vector<TensorPlan> plan = plan_tensors(s, type, n_layers);

  // Lay the file out with zero bytes (read from untouched pages), then write
  // every tensor in place: the weights exist once.
  uint64_t largest = 0;
  for (const auto& t : plan) largest = std::max(largest, t.bytes());
  CallocBuffer zeros(static_cast<size_t>(largest));
  if (zeros.data == nullptr) return error_status("synthetic model: cannot reserve " + std::to_string(largest) + " bytes");
  GgufWriter writer;
  write_metadata(writer, s, type, n_layers);
  std::map<std::string, size_t, std::less<>> index;
  for (size_t i = 0; i < plan.size(); ++i) {
    const auto& t = plan[i];
    std::vector<int64_t> ne = t.is_norm ? std::vector<int64_t>{t.cols} : std::vector<int64_t>{t.cols, t.rows};
    LLMPACK_RETURN_IF_ERROR(writer.add_tensor(t.name, t.dtype, std::move(ne),
                                              std::span<const uint8_t>(zeros.data, t.bytes())));
    index.emplace(t.name, i);
  }
  std::vector<uint8_t> bytes = writer.to_bytes();
  if (bytes.empty()) return error_status("synthetic model: the GGUF layout could not be encoded");
  auto fill = [&](const GgufTensorInfo& info, std::span<uint8_t> out) -> Status {
    auto it = index.find(info.name);
    if (it == index.end()) return error_status("synthetic model: unexpected tensor '" + info.name + "'");
    return fill_tensor(plan[it->second], options.seed + 7919 * it->second, out, pool);
  };
  auto gguf = GgufFile::from_owned_bytes(std::move(bytes), fill);
  if (!gguf.ok()) return gguf.status().with_context("synthetic " + s.name);
  auto model = Model::from_gguf(std::move(gguf).value());
  if (!model.ok()) return model.status().with_context("synthetic " + s.name);
  return model;
}

}  // namespace llmpack
