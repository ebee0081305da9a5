// Builds for CPUs that are not x86 (aarch64 phones and boards, Apple
// silicon): the AVX2, AVX-VNNI and AVX-512 kernels are not compiled there
// (their files need x86 intrinsics), and this file gives dispatch the same
// entry points, saying that no SIMD path takes anything. cpu_supports() is
// false for the three paths on such a CPU, so the active path is always the scalar reference and
// the kernel entries below are never reached; if one were, it stops the
// process rather than return a wrong product.
#include <cstdio>
#include <cstdlib>

#include "kernels/x86/avx2.h"
#include "kernels/x86/avx_vnni.h"
#include "kernels/x86/avx512.h"
#include "kernels/x86/rope_x86.h"

namespace llmpack::kernels {
namespace {

[[noreturn]] void no_simd_path(const char* entry) {
  std::fprintf(stderr, "llmpack: internal error: %s called on a CPU without x86 kernels\n", entry);
  std::abort();
}

}  // namespace

namespace avx2 {

bool supports(DType) { return false; }
size_t scratch_bytes(DType, int64_t, int64_t) { return 0; }
bool attention_tokens_supports(int64_t) { return false; }
size_t attention_tokens_scratch_floats(int64_t) { return 0; }

void prepare_activations(DType, const float*, int64_t, int64_t, int64_t, int64_t, void*, bool) {
  no_simd_path("avx2::prepare_activations");
}
bool same_preparation(DType, DType, bool) { return false; }
void matmul_rows(const WeightMatrix&, const float*, int64_t, float*, const void*, int64_t, int64_t) {
  no_simd_path("avx2::matmul_rows");
}
void rmsnorm(float*, const float*, const float*, int64_t, float) { no_simd_path("avx2::rmsnorm"); }
void softmax(float*, int64_t) { no_simd_path("avx2::softmax"); }
ExpWeights exp_weights(const float*, float, float*, int64_t) { no_simd_path("avx2::exp_weights"); }
void swiglu(float*, const float*, const float*, int64_t) { no_simd_path("avx2::swiglu"); }
int codebook_least_error(const CodebookCandidates&, const float*, const float*, float, float*) {
  no_simd_path("avx2::codebook_least_error");
}
void convert_to_f16(const float*, int64_t, uint16_t*) { no_simd_path("avx2::convert_to_f16"); }
void quantize_row_q8_0(const float*, int64_t, void*) { no_simd_path("avx2::quantize_row_q8_0"); }
void attention_head(const float*, const float*, const float*, int64_t, int64_t, int64_t, float, float*, float*) {
  no_simd_path("avx2::attention_head");
}
void attention_head_f16(const float*, const uint16_t*, const uint16_t*, int64_t, int64_t, int64_t, float, float*,
                        float*) {
  no_simd_path("avx2::attention_head_f16");
}
void attention_head_q8_0(const float*, const void*, const void*, int64_t, int64_t, int64_t, int64_t, float, float*,
                         float*) {
  no_simd_path("avx2::attention_head_q8_0");
}
void attention_query_group(const float*, int64_t, const KvHead&, int64_t, int64_t, float, float*, float*) {
  no_simd_path("avx2::attention_query_group");
}
void attention_tokens(const float*, int64_t, int64_t, int64_t, int64_t, const KvHead&, int64_t, float, float*,
                      float*, int64_t) {
  no_simd_path("avx2::attention_tokens");
}
void attention_decode_row(const KvHead&, const uint8_t*, int64_t, float*) {
  no_simd_path("avx2::attention_decode_row");
}
void rope_rotate(float*, const float*, const float*, int64_t, bool) { no_simd_path("avx2::rope_rotate"); }

}  // namespace avx2

namespace avx512 {

bool supports(DType, int64_t, bool, bool) { return false; }
bool attention_tokens_supports(int64_t) { return false; }
size_t attention_tokens_scratch_floats(int64_t) { return 0; }

void matmul_rows(const WeightMatrix&, const float*, int64_t, float*, const void*, int64_t, int64_t) {
  no_simd_path("avx512::matmul_rows");
}
void attention_tokens(const float*, int64_t, int64_t, int64_t, int64_t, const KvHead&, int64_t, float, float*,
                      float*, int64_t) {
  no_simd_path("avx512::attention_tokens");
}
bool attention_query_supports(CacheElem, int64_t, int64_t) { return false; }
void attention_head(const float*, const float*, const float*, int64_t, int64_t, int64_t, float, float*, float*) {
  no_simd_path("avx512::attention_head");
}
void attention_head_f16(const float*, const uint16_t*, const uint16_t*, int64_t, int64_t, int64_t, float, float*,
                        float*) {
  no_simd_path("avx512::attention_head_f16");
}
void attention_head_q8_0(const float*, const void*, const void*, int64_t, int64_t, int64_t, int64_t, float, float*,
                         float*) {
  no_simd_path("avx512::attention_head_q8_0");
}
void attention_query_group(const float*, int64_t, const KvHead&, int64_t, int64_t, float, float*, float*) {
  no_simd_path("avx512::attention_query_group");
}
ExpWeights exp_weights(const float*, float, float*, int64_t) { no_simd_path("avx512::exp_weights"); }

}  // namespace avx512

namespace avx_vnni {

bool supports(DType, int64_t) { return false; }
bool decode_supports(DType, int64_t) { return false; }
void matmul_rows(const WeightMatrix&, const void*, int64_t, float*, int64_t, int64_t) {
  no_simd_path("avx_vnni::matmul_rows");
}
void decode_rows(const WeightMatrix&, const void*, int64_t, float*, int64_t, int64_t) {
  no_simd_path("avx_vnni::decode_rows");
}

}  // namespace avx_vnni
}  // namespace llmpack::kernels
