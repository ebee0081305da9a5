// Helpers shared by the kernel tests: seeded random data, a guard that
// restores the kernel path, and packing floats into weight rows.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "kernels/iq_blocks.h"
#include "kernels/kernels.h"
#include "kernels/quantize.h"

namespace llmpack::kernels::testing {

// Every block-quantized weight type the kernels take, with the memory-only
// grouped Q5 layouts (quantize_row writes them as a load regroups them).
inline constexpr DType kBlockTypes[] = {DType::kQ8_0,  DType::kQ4_0,   DType::kQ4_1,   DType::kQ5_0,
                                        DType::kQ5_1,  DType::kQ5_0x8, DType::kQ5_1x8, DType::kQ2_K,
                                        DType::kQ3_K,  DType::kQ4_K,   DType::kQ5_K,   DType::kQ6_K,
                                        DType::kIQ4_NL, DType::kIQ4_XS};

// FNV-1a of a byte string: the recorded-bytes tests' fingerprint of a quantizer's output.
inline uint64_t fnv1a(const std::vector<uint8_t>& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (uint8_t b : bytes) h = (h ^ b) * 1099511628211ull;
  return h;
}

inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Restores the path active at construction when it goes out of scope.
class PathGuard {
 public:
  PathGuard() : saved_(active_kernel_path()) {}
  ~PathGuard() {
    (void)set_kernel_path(saved_);
    set_avx512_decode(Avx512Decode::kAuto);
    set_float_decode_prefetch(kFloatDecodePrefetchAuto);
  }
  PathGuard(const PathGuard&) = delete;
  PathGuard& operator=(const PathGuard&) = delete;

 private:
  KernelPath saved_;
};

// Packs float rows into F32 / F16 / BF16 bytes (rows * cols elements).
inline std::vector<uint8_t> pack_float(DType dtype, const std::vector<float>& v) {
  std::vector<uint8_t> out;
  if (dtype == DType::kF32) {
    out.resize(v.size() * 4);
    std::memcpy(out.data(), v.data(), out.size());
    return out;
  }
  out.resize(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t h = dtype == DType::kF16 ? f32_to_f16(v[i]) : f32_to_bf16(v[i]);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}

// A matmul test case: w is rows x cols, x is n_tokens x cols.
struct Shape {
  int64_t rows, cols, n_tokens;
};

// y = matmul(w, x) computed on `path`: [n_tokens, w.rows], prefilled with -1
// so rows a kernel forgot stand out. The AVX-512 path decodes with its own
// kernels unless told otherwise, so that they are tested on every CPU that
// can run them (kAuto leaves decode to the AVX2 kernels on some).
inline std::vector<float> matmul_on_path(KernelPath path, const WeightMatrix& w, const std::vector<float>& x,
                                         int64_t n_tokens, ThreadPool& pool,
                                         Avx512Decode decode = Avx512Decode::kOn) {
  PathGuard guard;
  EXPECT_TRUE(set_kernel_path(path));
  set_avx512_decode(decode);
  std::vector<float> y(static_cast<size_t>(n_tokens * w.rows), -1.0f);
  std::vector<uint8_t> scratch(matmul_scratch_bytes(w.dtype, w.cols, n_tokens));
  matmul(w, x.data(), n_tokens, y.data(), scratch.data(), pool);
  return y;
}

// Every path other than scalar, whether or not this machine runs it.
inline constexpr KernelPath kSimdKernelPaths[] = {KernelPath::kAvx2,     KernelPath::kAvxVnni,
                                                  KernelPath::kAvx512,   KernelPath::kNeon,
                                                  KernelPath::kNeonDotprod, KernelPath::kNeonI8mm};

// Paths other than scalar that this machine and build can run.
inline std::vector<KernelPath> simd_paths() {
  std::vector<KernelPath> paths;
  PathGuard guard;
  for (KernelPath p : kSimdKernelPaths)
    if (set_kernel_path(p)) paths.push_back(p);
  return paths;
}

// The scalar path, then every SIMD path this machine and build can run.
inline std::vector<KernelPath> all_paths() {
  std::vector<KernelPath> paths = {KernelPath::kScalar};
  for (KernelPath p : simd_paths()) paths.push_back(p);
  return paths;
}

// rows x cols floats as `rows` rows of `dtype`: packed (F32 / F16 / BF16) or
// quantized (block types).
inline std::vector<uint8_t> pack_rows(DType dtype, const std::vector<float>& values, int64_t rows, int64_t cols) {
  const auto info = dtype_info(dtype);
  if (info->block_elems == 1) return pack_float(dtype, values);
  const int64_t rb = row_bytes(*info, cols);
  std::vector<uint8_t> out(static_cast<size_t>(rb * rows));
  for (int64_t r = 0; r < rows; ++r)
    EXPECT_GT(quantize_row(dtype, values.data() + r * cols, cols, out.data() + r * rb), 0u) << dtype_name(dtype);
  return out;
}

// The int8 activations the SIMD paths dot with: per block of 32, d = amax /
// 127 and q = x * (127 / amax) rounded to nearest even, both in float as the
// kernels compute them.
struct QuantizedActs {
  std::vector<double> d;
  std::vector<int> q;
};
// One scale per `block` elements (32 for every quantized type; the codebook
// types' x86 kernels take 256), round to nearest even as the kernels do.
inline QuantizedActs quantize_like_the_kernels(const float* x, int64_t cols, int64_t block = 32) {
  QuantizedActs a{std::vector<double>(static_cast<size_t>(cols / block)), std::vector<int>(static_cast<size_t>(cols))};
  for (int64_t b = 0; b < cols / block; ++b) {
    float m = 0.0f;
    for (int64_t i = 0; i < block; ++i) m = std::max(m, std::fabs(x[block * b + i]));
    const float id = m > 0.0f ? 127.0f / m : 0.0f;
    a.d[b] = m / 127.0f;
    for (int64_t i = 0; i < block; ++i) a.q[block * b + i] = static_cast<int>(std::nearbyint(x[block * b + i] * id));
  }
  return a;
}

// rows x cols weights of a codebook `dtype` (no quantizer makes them) as
// random blocks with super-block scales between 0.005 and 0.02.
inline std::vector<uint8_t> random_iq_rows(DType dtype, int64_t rows, int64_t cols, uint32_t seed) {
  const auto info = *dtype_info(dtype);
  std::vector<uint8_t> bytes(static_cast<size_t>(row_bytes(info, cols) * rows));
  std::mt19937 rng(seed);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> scale(0.005f, 0.02f);
  for (size_t at = 0; at < bytes.size(); at += static_cast<size_t>(info.block_bytes)) {
    const uint16_t d = f32_to_f16(scale(rng));
    if (dtype != DType::kIQ1_M) {
      std::memcpy(&bytes[at], &d, 2);
      continue;
    }
    // IQ1_M: the f16 a nibble at a time in the top nibbles of its 4 uint16 scales.
    auto* block = reinterpret_cast<BlockIQ1_M*>(&bytes[at]);
    for (int n = 0; n < 4; ++n) {
      uint16_t sc = iq_load_u16(block->scales + 2 * n);
      sc = static_cast<uint16_t>((sc & 0x0FFF) | (((d >> (4 * n)) & 15) << 12));
      std::memcpy(block->scales + 2 * n, &sc, 2);
    }
    EXPECT_EQ(iq1m_d_bits(*block), d);
  }
  return bytes;
}

}  // namespace llmpack::kernels::testing
