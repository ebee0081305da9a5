// Kernel dispatch: picks the scalar reference or a SIMD path per call from
// the active path (the best the CPU supports, unless forced), and splits
// matmul rows over the thread pool.
#include <algorithm>
#include <atomic>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif
#include <limits>

#include "kernels/arm/neon.h"
#include "kernels/grouped_blocks.h"
#include "kernels/iq_blocks.h"
#include "kernels/kernels.h"
#include "kernels/reference/reference.h"
#include "kernels/x86/avx2.h"
#include "kernels/x86/avx512.h"
#include "kernels/x86/avx_vnni.h"

namespace llmpack::kernels {
namespace {

#if defined(__x86_64__) || defined(__i386__)
// CPUID leaf 1, ECX bit 29 (clang 14's __builtin_cpu_supports knows no "f16c").
bool cpu_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  return (ecx & (1u << 29)) != 0;
}
#endif

bool cpu_has_avx2() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
#else
  return false;
#endif
}

// AVX-VNNI (vpdpbusd on 256-bit vectors, VEX-encoded): CPUID leaf 7,
// sub-leaf 1, EAX bit 4 (GCC 12's __builtin_cpu_supports has no name for it).
// The OS's saving of the ymm state is part of what cpu_has_avx2 checks.
bool cpu_has_avx_vnni() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!cpu_has_avx2() || !__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) return false;
  return (eax & (1u << 4)) != 0;
#else
  return false;
#endif
}

// The AVX-512 path needs F, BW, VL, DQ and VNNI (vpdpbusd for the int8 dot
// products): Zen 4 and 5, Intel Ice Lake and later.
bool cpu_has_avx512() {
#if defined(__x86_64__) || defined(__i386__)
  return cpu_has_avx2() && __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni");
#else
  return false;
#endif
}

// Advanced SIMD (NEON) is part of the base AArch64 ISA: every 64-bit ARM CPU has it.
bool cpu_has_neon() {
#if defined(__aarch64__)
  return true;
#else
  return false;
#endif
}

// The dot-product extension (sdot / udot, FEAT_DotProd): Linux reports it as
// HWCAP_ASIMDDP (bit 20 of AT_HWCAP). Other systems: not detected (the plain
// NEON path runs).
bool cpu_has_dotprod() {
#if defined(__aarch64__) && defined(__linux__)
  constexpr unsigned long kHwcapAsimdDp = 1ul << 20;
  return cpu_has_neon() && (getauxval(AT_HWCAP) & kHwcapAsimdDp) != 0;
#else
  return false;
#endif
}

// The int8 matrix multiply (smmla, FEAT_I8MM, optional from ARMv8.2, part of
// ARMv8.6): Linux reports it as HWCAP2_I8MM (bit 13 of AT_HWCAP2). The
// neon_i8mm path also needs the dot product (its decode and 1-3 token
// products are the dotprod kernels).
bool cpu_has_i8mm() {
#if defined(__aarch64__) && defined(__linux__)
  constexpr unsigned long kHwcap2I8mm = 1ul << 13;
  return cpu_has_dotprod() && (getauxval(AT_HWCAP2) & kHwcap2I8mm) != 0;
#else
  return false;
#endif
}

// The CPU family of an AMD CPU, 0 for other vendors. Family 19h is Zen 3 and
// Zen 4 (of those only Zen 4 has AVX-512, and it splits each 512-bit
// instruction into two 256-bit halves); 1Ah is Zen 5, which runs them whole,
// as Intel's AVX-512 cores do. CPUID leaf 0: vendor; leaf 1 EAX: family =
// base (bits 8-11) + extended (bits 20-27) when base is 0xF.
unsigned amd_family() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return 0;
  const bool amd = ebx == 0x68747541u && edx == 0x69746e65u && ecx == 0x444d4163u;  // "AuthenticAMD"
  if (!amd || !__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
  const unsigned base = (eax >> 8) & 0xF, extended = (eax >> 20) & 0xFF;
  return base == 0xF ? base + extended : base;
#else
  return 0;
#endif
}

// Whether this build has kernels for the path (LLMPACK_FORCE_SCALAR builds use
// the reference only).
bool path_built(KernelPath path) {
#if defined(LLMPACK_FORCE_SCALAR)
  return path == KernelPath::kScalar;
#else
  return true;
#endif
}

KernelPath best_path() {
  if (path_built(KernelPath::kAvx512) && cpu_has_avx512()) return KernelPath::kAvx512;
  if (path_built(KernelPath::kAvxVnni) && cpu_has_avx_vnni()) return KernelPath::kAvxVnni;
  if (path_built(KernelPath::kAvx2) && cpu_has_avx2()) return KernelPath::kAvx2;
  // kNeonI8mm is chosen only when asked for (--kernel_path neon_i8mm): its
  // gain over the sdot panels has not been measured on an ARM core
  // (docs/PERFORMANCE.md section 32).
  if (path_built(KernelPath::kNeonDotprod) && cpu_has_dotprod()) return KernelPath::kNeonDotprod;
  if (path_built(KernelPath::kNeon) && cpu_has_neon()) return KernelPath::kNeon;
  return KernelPath::kScalar;
}

// Process-wide state, three pieces: which path the kernels take (set once from
// the CPU; tests switch it to compare paths) and, below, which decode kernels
// the AVX-512 path runs (avx512_decode_state) and how far ahead the float
// decode prefetches (float_decode_prefetch_state).
std::atomic<KernelPath>& path_state() {
  static std::atomic<KernelPath> state{best_path()};
  return state;
}

// The AVX-512 and AVX-VNNI paths run the AVX2 kernels wherever they have none
// of their own.
bool use_avx2() {
  const KernelPath path = path_state().load(std::memory_order_relaxed);
  return path == KernelPath::kAvx2 || path == KernelPath::kAvx512 || path == KernelPath::kAvxVnni;
}
bool use_avx_vnni() { return path_state().load(std::memory_order_relaxed) == KernelPath::kAvxVnni; }
bool use_avx512() { return path_state().load(std::memory_order_relaxed) == KernelPath::kAvx512; }
bool use_neon() {
  const KernelPath path = path_state().load(std::memory_order_relaxed);
  return path == KernelPath::kNeon || path == KernelPath::kNeonDotprod || path == KernelPath::kNeonI8mm;
}
// Which int8 kernels the NEON path's block types run.
neon::Int8Kernels neon_int8_kernels() {
  switch (path_state().load(std::memory_order_relaxed)) {
    case KernelPath::kNeonI8mm:
      return neon::Int8Kernels::kI8mm;
    case KernelPath::kNeonDotprod:
      return neon::Int8Kernels::kDotprod;
    default:
      return neon::Int8Kernels::kWidening;
  }
}

std::atomic<Avx512Decode>& avx512_decode_state() {
  static std::atomic<Avx512Decode> state{Avx512Decode::kAuto};
  return state;
}

// Bytes ahead the float decode tiles prefetch; kFloatDecodePrefetchAuto: this CPU's default.
std::atomic<int64_t>& float_decode_prefetch_state() {
  static std::atomic<int64_t> state{kFloatDecodePrefetchAuto};
  return state;
}


// Rows per parallel_for grain: a multiple of the 4-row register tiles and of
// the 32-row packed panels of the prefill path.
constexpr int64_t kRowGrain = 32;

// Splits the rows of a product over the pool. Decode (a few tokens) gives
// each thread one contiguous share: its pieces are microseconds long, and
// more, smaller calls cost it (section 11 of docs/PERFORMANCE.md). A prefill
// piece of 64 rows (two float blocks, two packed quantized groups) takes about a
// millisecond, so its pieces go to whichever thread is free: on a VM whose
// cores slow down by turns, a static split waited for the slower half.
constexpr int64_t kDynamicMinTokens = 4;
constexpr int64_t kPrefillRowPiece = 64;
static_assert(kPrefillRowPiece % kRowGrain == 0);

// fn(thread, begin, end) over [0, n) items of rows_per_item rows each (1 or kRowGrain).
void split_rows(ThreadPool& pool, int64_t n, int64_t n_tokens, ThreadPool::RangeFn fn,
                int64_t rows_per_item = 1) {
  if (n_tokens >= kDynamicMinTokens)
    return pool.parallel_for_dynamic(n, fn, kPrefillRowPiece / rows_per_item);
  pool.parallel_for(n, fn, kRowGrain / rows_per_item);
}

}  // namespace

KernelPath active_kernel_path() { return path_state().load(std::memory_order_relaxed); }

bool cpu_supports(KernelPath path) {
  switch (path) {
    case KernelPath::kScalar:
      return true;
    case KernelPath::kAvx2:
      return cpu_has_avx2();
    case KernelPath::kAvx512:
      return cpu_has_avx512();
    case KernelPath::kAvxVnni:
      return cpu_has_avx_vnni();
    case KernelPath::kNeon:
      return cpu_has_neon();
    case KernelPath::kNeonDotprod:
      return cpu_has_dotprod();
    case KernelPath::kNeonI8mm:
      return cpu_has_i8mm();
  }
  return false;
}

bool cpu_splits_512_bit_vectors() { return cpu_has_avx512() && amd_family() == 0x19; }

void set_avx512_decode(Avx512Decode mode) { avx512_decode_state().store(mode, std::memory_order_relaxed); }

bool avx512_decode_in_use() {
  switch (avx512_decode_state().load(std::memory_order_relaxed)) {
    case Avx512Decode::kOn:
      return true;
    case Avx512Decode::kOff:
      return false;
    case Avx512Decode::kAuto:
      break;
  }
  static const bool split = cpu_splits_512_bit_vectors();
  return !split;
}

bool avx512_codebook_decode_in_use() {
  return avx512_decode_state().load(std::memory_order_relaxed) != Avx512Decode::kOff;
}

namespace {
// Decode attention takes the AVX-512 kernel where the AVX-512 decode kernels
// run (not on a CPU that splits 512-bit vectors, unless asked) and the rows
// and head are ones it has.
bool use_avx512_decode_attention(CacheElem elem, int64_t first, int64_t head_dim) {
  return use_avx512() && avx512_decode_in_use() && avx512::attention_query_supports(elem, first, head_dim);
}
}  // namespace

int64_t cpu_float_decode_prefetch() {
  static const int64_t bytes = amd_family() == 0x1A ? 1024 : 0;
  return bytes;
}

void set_float_decode_prefetch(int64_t bytes) {
  float_decode_prefetch_state().store(bytes < 0 ? kFloatDecodePrefetchAuto : bytes, std::memory_order_relaxed);
}

int64_t float_decode_prefetch() {
  const int64_t bytes = float_decode_prefetch_state().load(std::memory_order_relaxed);
  return bytes == kFloatDecodePrefetchAuto ? cpu_float_decode_prefetch() : bytes;
}

bool set_kernel_path(KernelPath path) {
  if (!path_built(path) || !cpu_supports(path)) return false;
  path_state().store(path, std::memory_order_relaxed);
  return true;
}

std::string_view kernel_path_name(KernelPath path) {
  switch (path) {
    case KernelPath::kScalar:
      return "scalar";
    case KernelPath::kAvx2:
      return "avx2";
    case KernelPath::kAvx512:
      return "avx512";
    case KernelPath::kAvxVnni:
      return "avx_vnni";
    case KernelPath::kNeon:
      return "neon";
    case KernelPath::kNeonDotprod:
      return "neon_dotprod";
    case KernelPath::kNeonI8mm:
      return "neon_i8mm";
  }
  return "unknown";
}

bool matmul_supports(DType dtype) { return ref::supports(dtype); }

namespace {
std::atomic<bool>& regroup_state() {
  static std::atomic<bool> state{true};
  return state;
}
}  // namespace

void set_regroup_at_load(bool on) { regroup_state().store(on, std::memory_order_relaxed); }

// Where decode runs the AVX2 kernels: the AVX2 and AVX-VNNI paths, and the
// AVX-512 path when its decode leaves the AVX-512 kernels (Zen 4,
// --avx512_decode off).
// The AVX-512 decode of the plain layout is as fast as the AVX2 decode of the
// grouped one, and there regrouping (pages rewritten in place: 4 KiB pages
// for what was in 2 MiB ones) cost prefill 3-9% (docs/PERFORMANCE.md
// section 31).
DType load_layout(DType stored) {
  const auto grouped = grouped_type(stored);
  if (!grouped || !regroup_state().load(std::memory_order_relaxed) || !use_avx2()) return stored;
  if (use_avx512() && avx512_decode_in_use()) return stored;
  return *grouped;
}

bool simd_matmul_takes(KernelPath path, DType dtype) {
  switch (path) {
    case KernelPath::kScalar:
      return false;
    case KernelPath::kAvx2:
    case KernelPath::kAvx512:
    case KernelPath::kAvxVnni:
      return avx2::supports(dtype);
    case KernelPath::kNeon:
    case KernelPath::kNeonDotprod:
    case KernelPath::kNeonI8mm:
      return neon::supports(dtype);
  }
  return false;
}

size_t matmul_scratch_bytes(DType dtype, int64_t cols, int64_t n_tokens) {
  // Sized for the SIMD paths even when the scalar one is active, so a path
  // switch never finds the buffer too small.
  return std::max(avx2::scratch_bytes(dtype, cols, n_tokens), neon::scratch_bytes(dtype, cols, n_tokens));
}

namespace {

// Whether the input can be multiplied at all; the engine checks
// matmul_supports at load, so a failure here only shows up as NaN outputs
// rather than a crash.
bool matmul_input_ok(const WeightMatrix& w) {
  const auto info = dtype_info(w.dtype);
  return matmul_supports(w.dtype) && info && w.data != nullptr && w.cols % info->block_elems == 0;
}

void fill_nan(float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::numeric_limits<float>::quiet_NaN();
}

// The scratch the active SIMD path's preparation of the activations fills (0:
// it prepares nothing for this type).
size_t simd_scratch_bytes(DType dtype, int64_t cols, int64_t n_tokens) {
  if (use_neon()) return neon::scratch_bytes(dtype, cols, n_tokens);
  return avx2::scratch_bytes(dtype, cols, n_tokens);
}

// Whether the SIMD kernels take w (else the scalar reference does).
bool simd_takes(const WeightMatrix& w, int64_t n_tokens, const void* scratch) {
  const bool takes = use_neon() ? neon::supports(w.dtype) : use_avx2() && avx2::supports(w.dtype);
  return takes && (simd_scratch_bytes(w.dtype, w.cols, n_tokens) == 0 || scratch != nullptr);
}

// Rows [b, e) of y = w · x on the SIMD path, after prepare().
void simd_rows(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
               const void* scratch, int64_t b, int64_t e) {
  if (use_neon()) return neon::matmul_rows(w, x, n_tokens, y, scratch, b, e, neon_int8_kernels());
  if (use_avx512() && avx512::supports(w.dtype, n_tokens, avx512_decode_in_use(), avx512_codebook_decode_in_use()))
    return avx512::matmul_rows(w, x, n_tokens, y, scratch, b, e);
  if (use_avx_vnni() && avx_vnni::supports(w.dtype, n_tokens))
    return avx_vnni::matmul_rows(w, scratch, n_tokens, y, b, e);
  avx2::matmul_rows(w, x, n_tokens, y, scratch, b, e);
}

// Quantizes the activations for the integer kernels: dtype's preparation and,
// where a group needs a second kind into the same buffer, also's (kF32 or a
// float type: none), in one pass over the tokens.
void prepare(DType dtype, const float* x, int64_t cols, int64_t n_tokens, void* scratch,
             ThreadPool& pool, DType also = DType::kF32) {
  const bool first = simd_scratch_bytes(dtype, cols, n_tokens) > 0;
  const bool neon = use_neon();
  // the AVX-512 path's packed GEMM takes the codebook types from this many tokens
  const bool codebook_blocks = !neon && use_avx512() && n_tokens >= kCodebookPackedMinTokens;
  const bool second = simd_scratch_bytes(also, cols, n_tokens) > 0 &&
                      !(first && !neon && avx2::same_preparation(dtype, also, codebook_blocks));
  if (!first && !second) return;
  pool.parallel_for(n_tokens, [&](int, int64_t b, int64_t e) {
    const auto run = [&](DType d) {
      if (neon) return neon::prepare_activations(d, x, cols, n_tokens, b, e, scratch);
      avx2::prepare_activations(d, x, cols, n_tokens, b, e, scratch, codebook_blocks);
    };
    if (first) run(dtype);
    if (second) run(also);
  });
}

}  // namespace

void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, void* scratch,
            ThreadPool& pool) {
  if (n_tokens <= 0 || w.rows <= 0) return;
  if (!matmul_input_ok(w)) return fill_nan(y, n_tokens * w.rows);
  if (!simd_takes(w, n_tokens, scratch)) {
    split_rows(pool, w.rows, n_tokens,
               [&](int, int64_t b, int64_t e) { ref::matmul_rows(w, x, n_tokens, y, b, e); });
    return;
  }
  prepare(w.dtype, x, w.cols, n_tokens, scratch, pool);
  split_rows(pool, w.rows, n_tokens,
             [&](int, int64_t b, int64_t e) { simd_rows(w, x, n_tokens, y, scratch, b, e); });
}

void matmul_group(std::span<const MatmulOutput> outputs, const float* x, int64_t n_tokens,
                  void* scratch, ThreadPool& pool) {
  if (n_tokens <= 0 || outputs.empty()) return;
  // The activations are prepared once for the group: every block type reads
  // the same preparation (avx2:: or neon::prepare_activations), float types
  // none. On x86 the codebook types read another (int8 runs of 256, in the
  // same buffer after the block types' region), so a group mixing the two
  // gets both; NEON's serves both kinds.
  DType block_prep = DType::kF32, codebook_prep = DType::kF32;
  bool grouped = outputs.size() <= kMaxGroup;
  for (const MatmulOutput& o : outputs) {
    grouped = grouped && o.w.rows > 0 && o.w.cols == outputs[0].w.cols && matmul_input_ok(o.w) &&
              simd_takes(o.w, n_tokens, scratch);
    if (simd_scratch_bytes(o.w.dtype, o.w.cols, n_tokens) == 0) continue;
    (is_codebook_type(o.w.dtype) ? codebook_prep : block_prep) = o.w.dtype;
  }
  if (!grouped) {
    for (const MatmulOutput& o : outputs) matmul(o.w, x, n_tokens, o.y, scratch, pool);
    return;
  }
  const int64_t cols = outputs[0].w.cols;
  if (use_neon()) {
    prepare(block_prep != DType::kF32 ? block_prep : codebook_prep, x, cols, n_tokens, scratch, pool);
  } else {
    prepare(codebook_prep, x, cols, n_tokens, scratch, pool, block_prep);
  }
  // Work units are kRowGrain-row slices of each matrix in turn (a slice never
  // straddles two matrices, so every kernel call starts on a tile boundary).
  int64_t first_unit[kMaxGroup + 1] = {0};
  for (size_t i = 0; i < outputs.size(); ++i)
    first_unit[i + 1] = first_unit[i] + (outputs[i].w.rows + kRowGrain - 1) / kRowGrain;
  const auto run_units = [&](int, int64_t ub, int64_t ue) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      const int64_t lo = std::max(ub, first_unit[i]), hi = std::min(ue, first_unit[i + 1]);
      if (lo >= hi) continue;
      const WeightMatrix& w = outputs[i].w;
      simd_rows(w, x, n_tokens, outputs[i].y, scratch, (lo - first_unit[i]) * kRowGrain,
                std::min(w.rows, (hi - first_unit[i]) * kRowGrain));
    }
  };
  split_rows(pool, first_unit[outputs.size()], n_tokens, run_units, kRowGrain);
}

void dequantize_row(const WeightMatrix& w, int64_t r, float* out) {
  const auto info = dtype_info(w.dtype);
  if (!info || r < 0 || r >= w.rows) return;
  const auto* row = static_cast<const uint8_t*>(w.data) + r * row_bytes(*info, w.cols);
  ref::dequantize_elems(w.dtype, row, w.cols, out);
}

void rmsnorm(float* out, const float* x, const float* weight, int64_t n, float eps) {
  if (use_neon()) return neon::rmsnorm(out, x, weight, n, eps);
  if (use_avx2()) return avx2::rmsnorm(out, x, weight, n, eps);
  ref::rmsnorm(out, x, weight, n, eps);
}

// rope: kernels/rope.cc (cos/sin reused across the heads of a position).

void softmax(float* x, int64_t n) {
  if (use_neon()) return neon::softmax(x, n);
  if (use_avx2()) return avx2::softmax(x, n);
  ref::softmax(x, n);
}

ExpWeights exp_weights(const float* x, float scale, float* out, int64_t n) {
  if (use_neon()) return neon::exp_weights(x, scale, out, n);
  if (use_avx512()) return avx512::exp_weights(x, scale, out, n);
  if (use_avx2()) return avx2::exp_weights(x, scale, out, n);
  return ref::exp_weights(x, scale, out, n);
}

int codebook_least_error(const CodebookCandidates& c, const float* t, const float* w, float s, float* err) {
  if (use_avx2()) return avx2::codebook_least_error(c, t, w, s, err);
  if (use_neon()) return neon::codebook_least_error(c, t, w, s, err);
  return ref::codebook_least_error(c, t, w, s, err);
}

void swiglu(float* out, const float* gate, const float* up, int64_t n) {
  if (use_neon()) return neon::swiglu(out, gate, up, n);
  if (use_avx2()) return avx2::swiglu(out, gate, up, n);
  ref::swiglu(out, gate, up, n);
}

void convert_to_f16(const float* x, int64_t n, uint16_t* out) {
  if (use_neon()) return neon::convert_to_f16(x, n, out);
  if (use_avx2()) return avx2::convert_to_f16(x, n, out);
  ref::convert_to_f16(x, n, out);
}

void quantize_row_q8_0(const float* x, int64_t n, void* out) {
  if (use_neon()) return neon::quantize_row_q8_0(x, n, out);
  if (use_avx2()) return avx2::quantize_row_q8_0(x, n, out);
  ref::quantize_row_q8_0(x, n, out);
}

void attention_head(const float* q, const float* k, const float* v, int64_t kv_stride,
                    int64_t n_ctx, int64_t head_dim, float scale, float* scores, float* out) {
  if (use_neon()) return neon::attention_head(q, k, v, kv_stride, n_ctx, head_dim, scale, scores, out);
  if (use_avx512_decode_attention(CacheElem::kF32, 0, head_dim))
    return avx512::attention_head(q, k, v, kv_stride, n_ctx, head_dim, scale, scores, out);
  if (use_avx2()) return avx2::attention_head(q, k, v, kv_stride, n_ctx, head_dim, scale, scores, out);
  ref::attention_head(q, k, v, kv_stride, n_ctx, head_dim, scale, scores, out);
}

void attention_head_f16(const float* q, const uint16_t* k, const uint16_t* v,
                        int64_t row_stride_bytes, int64_t n_ctx, int64_t head_dim, float scale,
                        float* scores, float* out) {
  if (use_neon()) return neon::attention_head_f16(q, k, v, row_stride_bytes, n_ctx, head_dim, scale, scores, out);
  if (use_avx512_decode_attention(CacheElem::kF16, 0, head_dim))
    return avx512::attention_head_f16(q, k, v, row_stride_bytes, n_ctx, head_dim, scale, scores, out);
  if (use_avx2())
    return avx2::attention_head_f16(q, k, v, row_stride_bytes, n_ctx, head_dim, scale, scores, out);
  ref::attention_head_f16(q, k, v, row_stride_bytes, n_ctx, head_dim, scale, scores, out);
}

void attention_head_q8_0(const float* q, const void* k, const void* v, int64_t row_stride_bytes,
                         int64_t first, int64_t n_ctx, int64_t head_dim, float scale,
                         float* scores, float* out) {
  if (use_neon())
    return neon::attention_head_q8_0(q, k, v, row_stride_bytes, first, n_ctx, head_dim, scale, scores, out);
  if (use_avx512_decode_attention(CacheElem::kQ8_0, first, head_dim))
    return avx512::attention_head_q8_0(q, k, v, row_stride_bytes, first, n_ctx, head_dim, scale, scores, out);
  if (use_avx2())
    return avx2::attention_head_q8_0(q, k, v, row_stride_bytes, first, n_ctx, head_dim, scale,
                                     scores, out);
  ref::attention_head_q8_0(q, k, v, row_stride_bytes, first, n_ctx, head_dim, scale, scores, out);
}

size_t attention_tokens_scratch_floats(int64_t head_dim, int64_t max_ctx) {
  // the per-query path needs a score per position; the SIMD tiles a fixed block
  return std::max({static_cast<size_t>(std::max<int64_t>(max_ctx, 1)), avx2::attention_tokens_scratch_floats(head_dim),
                   avx512::attention_tokens_scratch_floats(head_dim), neon::attention_tokens_scratch_floats(head_dim)});
}

void attention_tokens(const float* q, int64_t q_stride, int64_t n_tokens, int64_t group, int64_t start_pos,
                      const KvHead& kv, int64_t head_dim, float scale, float* scratch, float* out,
                      int64_t out_stride) {
  if (use_neon() && neon::attention_tokens_supports(head_dim))
    return neon::attention_tokens(q, q_stride, n_tokens, group, start_pos, kv, head_dim, scale, scratch, out,
                                  out_stride);
  if (use_avx512() && avx512::attention_tokens_supports(head_dim))
    return avx512::attention_tokens(q, q_stride, n_tokens, group, start_pos, kv, head_dim, scale, scratch, out,
                                    out_stride);
  if (use_avx2() && avx2::attention_tokens_supports(head_dim))
    return avx2::attention_tokens(q, q_stride, n_tokens, group, start_pos, kv, head_dim, scale, scratch, out,
                                  out_stride);
  // One query at a time (the scalar path, and head sizes the tiles do not take).
  for (int64_t t = 0; t < n_tokens; ++t)
    for (int64_t h = 0; h < group; ++h)
      attention_query(q + t * q_stride + h * head_dim, kv, start_pos + t + 1, head_dim, scale, scratch,
                      out + t * out_stride + h * head_dim);
}

void attention_query_group(const float* q, int64_t n_queries, const KvHead& kv, int64_t n_ctx, int64_t head_dim,
                           float scale, float* scores, float* out) {
  if (use_neon()) return neon::attention_query_group(q, n_queries, kv, n_ctx, head_dim, scale, scores, out);
  if (use_avx512_decode_attention(kv.elem, kv.first, head_dim))
    return avx512::attention_query_group(q, n_queries, kv, n_ctx, head_dim, scale, scores, out);
  if (use_avx2()) return avx2::attention_query_group(q, n_queries, kv, n_ctx, head_dim, scale, scores, out);
  for (int64_t g = 0; g < n_queries; ++g)
    attention_query(q + g * head_dim, kv, n_ctx, head_dim, scale, scores + g * n_ctx, out + g * head_dim);
}

void attention_query(const float* q, const KvHead& kv, int64_t n_ctx, int64_t head_dim, float scale,
                     float* scores, float* out) {
  const auto* k = static_cast<const uint8_t*>(kv.k);
  const auto* v = static_cast<const uint8_t*>(kv.v);
  switch (kv.elem) {
    case CacheElem::kF32:
      return attention_head(q, reinterpret_cast<const float*>(k) + kv.first,
                            reinterpret_cast<const float*>(v) + kv.first,
                            kv.row_stride_bytes / static_cast<int64_t>(sizeof(float)), n_ctx, head_dim, scale, scores,
                            out);
    case CacheElem::kF16:
      return attention_head_f16(q, reinterpret_cast<const uint16_t*>(k) + kv.first,
                                reinterpret_cast<const uint16_t*>(v) + kv.first, kv.row_stride_bytes, n_ctx,
                                head_dim, scale, scores, out);
    case CacheElem::kQ8_0:
      return attention_head_q8_0(q, k, v, kv.row_stride_bytes, kv.first, n_ctx, head_dim, scale, scores, out);
  }
}

}  // namespace llmpack::kernels
