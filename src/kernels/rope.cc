// kernels::rope with the angles' cos/sin reused across heads: the forward
// pass rotates every q and k head of a token at one position, and cos/sin
// (not the rotation) is what costs (1B prefill: 40 heads x 32 pairs x 512
// tokens x 16 layers calls). Each thread keeps the table of its last
// (pos, rot_dim, inv_freq values) in fixed thread-local storage (no heap);
// values are computed exactly as the reference does, so results are identical.
// The rotation itself runs in AVX2 on the x86 SIMD paths (x86/rope_x86.cc) and
// in NEON on the ARM ones (arm/rope_neon.cc), also bit-identical to the reference.
#include <cmath>
#include <cstring>

#include "kernels/arm/neon.h"
#include "kernels/kernels.h"
#include "kernels/reference/reference.h"
#include "kernels/x86/rope_x86.h"

namespace llmpack::kernels {
namespace {

constexpr int64_t kMaxHalf = 256;  // rot_dim up to 512 is cached; wider ones compute directly

struct RopeTable {
  int64_t pos = -1;
  int64_t half = 0;
  float inv_freq[kMaxHalf];
  float cos[kMaxHalf];
  float sin[kMaxHalf];
};

const RopeTable& table_for(int64_t pos, int64_t half, const float* inv_freq) {
  thread_local RopeTable t;
  if (t.pos == pos && t.half == half &&
      std::memcmp(t.inv_freq, inv_freq, static_cast<size_t>(half) * sizeof(float)) == 0)
    return t;
  for (int64_t i = 0; i < half; ++i) {
    const float theta = static_cast<float>(pos) * inv_freq[i];
    t.cos[i] = std::cos(theta);
    t.sin[i] = std::sin(theta);
  }
  std::memcpy(t.inv_freq, inv_freq, static_cast<size_t>(half) * sizeof(float));
  t.pos = pos;
  t.half = half;
  return t;
}

}  // namespace

void rope(float* x, int64_t head_dim, int64_t rot_dim, int64_t pos, const float* inv_freq,
          RopeStyle style) {
  const int64_t half = rot_dim / 2;
  if (half <= 0 || half > kMaxHalf) return ref::rope(x, head_dim, rot_dim, pos, inv_freq, style);
  const RopeTable& t = table_for(pos, half, inv_freq);
  const bool adjacent = style == RopeStyle::kAdjacentPairs;
  const KernelPath path = active_kernel_path();
  if (path == KernelPath::kAvx2 || path == KernelPath::kAvx512 || path == KernelPath::kAvxVnni)
    return avx2::rope_rotate(x, t.cos, t.sin, half, adjacent);
  if (path == KernelPath::kNeon || path == KernelPath::kNeonDotprod || path == KernelPath::kNeonI8mm)
    return neon::rope_rotate(x, t.cos, t.sin, half, adjacent);
  for (int64_t i = 0; i < half; ++i) {
    const int64_t a = adjacent ? 2 * i : i;
    const int64_t b = adjacent ? 2 * i + 1 : i + half;
    const float x0 = x[a], x1 = x[b];
    x[a] = x0 * t.cos[i] - x1 * t.sin[i];
    x[b] = x0 * t.sin[i] + x1 * t.cos[i];
  }
}

}  // namespace llmpack::kernels
