// Quantizers: f32 rows into the GGUF block layouts (quant_blocks.h,
// iq_blocks.h), used by the exporter. Round-to-nearest; the K-quants and the
// IQ types search their sub-block scales (and the codebook types each group's
// entry) for the least squared error.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace llmpack::kernels {

// F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K,
// IQ4_NL, IQ4_XS, and the codebook types IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S,
// IQ3_XXS, IQ3_S.
bool quantize_supports(DType dtype);

// Writes n elements of src (n a multiple of the type's block size) as
// `dtype` into dst (row_bytes(dtype, n) bytes). Returns the bytes written,
// 0 when the type is not supported or n is not a multiple of its block.
// The memory-only grouped layouts (kQ5_0x8, kQ5_1x8) are written too: the
// plain type's row, regrouped as a load would (tests build them this way).
// `importance` (n floats, or nullptr): each column's mean squared activation
// from an importance matrix; the searched types (Q4_0, Q5_0, Q4_1, Q5_1, the
// K-quants, IQ4_NL, IQ4_XS, the codebook types) then weight their squared
// error by it. The other types (F32, F16, BF16, Q8_0) ignore it.
size_t quantize_row(DType dtype, const float* src, int64_t n, void* dst, const float* importance = nullptr);

}  // namespace llmpack::kernels
