// Converting source tensors into the package's types: decode each row to
// f32 (any type the kernels can dequantize), undo Hugging Face's rotate_half
// row order where asked, and quantize (src/kernels/quantize.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "core/status.h"
#include "export/export_options.h"
#include "export/model_source.h"

namespace llmpack {

// The type `t` is written as under `plan` (overrides included). A matrix whose
// rows do not fit the type's block falls back as llama.cpp's quantizer does
// (Q4_K to Q5_0, Q6_K to Q8_0, ...; f16 when that does not fit either) and
// `fell_back` is set. Vectors (norms, biases) are always f32. The mixes give
// the output matrix more bits; `output_name` names it: output.weight, or
// token_embd.weight when the model ties its output to the embedding (as
// llama.cpp's quantizer treats a model without output.weight).
struct TensorTypeChoice {
  DType type = DType::kF32;
  bool fell_back = false;
  std::string asked_by;  // what asked for the type that did not fit: "q4_k_m", "--output_dtype q6_k"
};
TensorTypeChoice plan_tensor_type(const SourceTensor& t, const DTypePlan& plan, const SourceHyperparameters& hp,
                                  const std::string& output_name);

// The bytes of `t` as `target`: a view of the source when nothing changes,
// else `*out`, resized and overwritten (the exporter reuses one buffer for
// every tensor, each written before the next converts). Rows convert on
// `pool`'s threads (each row alone, so the bytes do not depend on the thread
// count), in bands of about `band_bytes` of source rows whose pages are let
// go once converted (MappedFile::release_pages), so a tensor of gigabytes
// is not resident whole; the bytes do not depend on the band either.
// `importance` (t.ne[0] floats, or nullptr): each column's mean squared
// activation, for kernels::quantize_row.
inline constexpr int64_t kConvertBandBytes = int64_t{64} << 20;
Result<std::span<const uint8_t>> convert_tensor(const SourceTensor& t, DType target, std::vector<uint8_t>* out,
                                                ThreadPool& pool, int64_t band_bytes = kConvertBandBytes,
                                                const float* importance = nullptr);

}  // namespace llmpack
