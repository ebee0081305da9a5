// Builds for CPUs that are not 64-bit ARM: the NEON kernels are not compiled
// there (arm/*_neon.cc need <arm_neon.h>), and this file gives dispatch the
// same entry points, saying that the NEON path takes nothing. cpu_supports()
// is false for kNeon on such a CPU, so the entries below are never reached;
// if one were, it stops the process rather than return a wrong product.
#include <cstdio>
#include <cstdlib>

#include "kernels/arm/neon.h"

namespace llmpack::kernels::neon {
namespace {

[[noreturn]] void no_neon_path(const char* entry) {
  std::fprintf(stderr, "llmpack: internal error: %s called on a CPU without NEON kernels\n", entry);
  std::abort();
}

}  // namespace

bool supports(DType) { return false; }
size_t scratch_bytes(DType, int64_t, int64_t) { return 0; }

void prepare_activations(DType, const float*, int64_t, int64_t, int64_t, int64_t, void*) {
  no_neon_path("neon::prepare_activations");
}
void matmul_rows(const WeightMatrix&, const float*, int64_t, float*, const void*, int64_t, int64_t, Int8Kernels) {
  no_neon_path("neon::matmul_rows");
}
void rmsnorm(float*, const float*, const float*, int64_t, float) { no_neon_path("neon::rmsnorm"); }
void rope_rotate(float*, const float*, const float*, int64_t, bool) { no_neon_path("neon::rope_rotate"); }
void softmax(float*, int64_t) { no_neon_path("neon::softmax"); }
ExpWeights exp_weights(const float*, float, float*, int64_t) { no_neon_path("neon::exp_weights"); }
void swiglu(float*, const float*, const float*, int64_t) { no_neon_path("neon::swiglu"); }
void convert_to_f16(const float*, int64_t, uint16_t*) { no_neon_path("neon::convert_to_f16"); }
void quantize_row_q8_0(const float*, int64_t, void*) { no_neon_path("neon::quantize_row_q8_0"); }
void attention_head(const float*, const float*, const float*, int64_t, int64_t, int64_t, float, float*, float*) {
  no_neon_path("neon::attention_head");
}
void attention_head_f16(const float*, const uint16_t*, const uint16_t*, int64_t, int64_t, int64_t, float, float*,
                        float*) {
  no_neon_path("neon::attention_head_f16");
}
void attention_head_q8_0(const float*, const void*, const void*, int64_t, int64_t, int64_t, int64_t, float, float*,
                         float*) {
  no_neon_path("neon::attention_head_q8_0");
}
void attention_query_group(const float*, int64_t, const KvHead&, int64_t, int64_t, float, float*, float*) {
  no_neon_path("neon::attention_query_group");
}

bool attention_tokens_supports(int64_t) { return false; }
size_t attention_tokens_scratch_floats(int64_t) { return 0; }
void attention_tokens(const float*, int64_t, int64_t, int64_t, int64_t, const KvHead&, int64_t, float, float*,
                      float*, int64_t) {
  no_neon_path("neon::attention_tokens");
}
void attention_decode_row(const KvHead&, const uint8_t*, int64_t, float*) {
  no_neon_path("neon::attention_decode_row");
}
int codebook_least_error(const CodebookCandidates&, const float*, const float*, float, float*) {
  no_neon_path("neon::codebook_least_error");
}

}  // namespace llmpack::kernels::neon
