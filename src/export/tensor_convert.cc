#include "export/tensor_convert.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <regex>

#include "core/half.h"
#include "format/mapped_file.h"
#include "kernels/iq_blocks.h"
#include "kernels/kernels.h"
#include "kernels/quantize.h"

namespace llmpack {
namespace {

bool is_vector(const SourceTensor& t) {
  int64_t rows = 1;
  for (size_t d = 1; d < t.ne.size(); ++d) rows *= t.ne[d];
  return t.ne.size() <= 1 || rows == 1;
}

int64_t layer_of(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return -1;
  return std::strtoll(name.c_str() + 4, nullptr, 10);
}

// One row of the source as f32.
void decode_row(const SourceTensor& t, int64_t rows, int64_t cols, int64_t r, float* out) {
  const uint8_t* base = t.bytes.data();
  switch (t.dtype) {
    case DType::kF32:
      std::memcpy(out, base + r * cols * 4, cols * 4);
      return;
    case DType::kF16:
    case DType::kBF16:
      for (int64_t c = 0; c < cols; ++c) {
        uint16_t h;
        std::memcpy(&h, base + (r * cols + c) * 2, 2);
        out[c] = t.dtype == DType::kF16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      return;
    default:
      kernels::dequantize_row(kernels::WeightMatrix{t.dtype, rows, cols, base}, r, out);
  }
}

// The plan's type for matrix `name`: its mix's rule (format/llama_mix.h), or
// its one type. A single codebook type (iq2_xs, ...) still gives the output
// matrix and the embedding the types its llama-quantize file gives them: the
// 1- to 3-bit codebooks lose too much there, and an embedding has no
// importances.
DType mix_type(const SourceTensor& t, const DTypePlan& plan, const SourceHyperparameters& hp,
               const std::string& output_name) {
  const MixTensor m{t.name,
                    layer_of(t.name),
                    hp.n_layers,
                    hp.n_kv_heads > 0 ? hp.n_heads / hp.n_kv_heads : 1,
                    t.ne[0],
                    t.name == output_name,
                    plan.has_imatrix};
  if (plan.mix != nullptr) return llama_mix_type(*plan.mix, m);
  if (kernels::is_codebook_type(plan.matrix) && (m.is_output || t.name == "token_embd.weight"))
    return llama_mix_type(*find_llama_file_type(dtype_name(plan.matrix)), m);
  return plan.matrix;
}

// The override that names tensor `name`, in llama-quantize's precedence
// (its --token-embedding-type, --output-tensor-type and --tensor-type): the
// embedding's and the output's own flags first, then the first pattern the
// name holds, then the output's type for an embedding tied to the output.
const TypeOverride* override_for(const std::string& name, const DTypePlan& plan, const std::string& output_name) {
  if (plan.embedding && name == "token_embd.weight") return &*plan.embedding;
  if (plan.output && name == "output.weight") return &*plan.output;
  for (const TypeOverride& rule : plan.tensor_rules)
    if (std::regex_search(name, *rule.pattern)) return &rule;
  if (plan.output && name == output_name) return &*plan.output;
  return nullptr;
}

}  // namespace

TensorTypeChoice plan_tensor_type(const SourceTensor& t, const DTypePlan& plan, const SourceHyperparameters& hp,
                                  const std::string& output_name) {
  TensorTypeChoice c;
  if (is_vector(t)) return c;  // f32
  const TypeOverride* named = override_for(t.name, plan, output_name);
  if (named == nullptr && plan.keep) {
    c.type = t.dtype;
    return c;
  }
  const DType want = named != nullptr ? named->type : mix_type(t, plan, hp, output_name);
  // the notice of a fallback names what asked: the flag, the plan's type,
  // or the mix and the type it chose for this tensor ("q4_0 mix's q6_k")
  c.asked_by = named != nullptr       ? named->given
               : want == plan.matrix ? plan.name
                                     : plan.name + " mix's " + std::string(dtype_name(want));
  c.type = llama_fallback_type(want, t.ne[0]);
  c.fell_back = c.type != want;
  return c;
}

Result<std::span<const uint8_t>> convert_tensor(const SourceTensor& t, DType target, std::vector<uint8_t>* out,
                                                ThreadPool& pool, int64_t band_bytes, const float* importance) {
  if (target == t.dtype && t.unpermute_heads == 0) return t.bytes;
  const bool vec = t.ne.size() <= 1;
  // Vectors to un-permute go element by element (rows of one column).
  const bool per_element = vec && t.unpermute_heads > 0;
  int64_t rows = 1, cols = t.ne.empty() ? 1 : t.ne[0];
  for (size_t d = 1; d < t.ne.size(); ++d) rows *= t.ne[d];
  if (per_element) std::swap(rows, cols);
  const auto in_info = dtype_info(t.dtype);
  const auto out_info = dtype_info(target);
  if (!in_info || !out_info || !kernels::quantize_supports(target))
    return error_status("tensor '" + t.name + "': cannot convert " + std::string(dtype_name(t.dtype)) + " to " +
                        std::string(dtype_name(target)));
  if (t.dtype != DType::kF32 && t.dtype != DType::kF16 && t.dtype != DType::kBF16 &&
      !kernels::matmul_supports(t.dtype))
    return error_status("tensor '" + t.name + "' has type " + std::string(dtype_name(t.dtype)) +
                        ", which this build cannot decode");
  if (cols % in_info->block_elems != 0 || cols % out_info->block_elems != 0 ||
      static_cast<uint64_t>(row_bytes(*in_info, cols) * rows) != t.bytes.size())
    return error_status("tensor '" + t.name + "': its size does not match its shape and type");
  int64_t head_rows = 0;
  if (t.unpermute_heads > 0) {
    head_rows = rows / t.unpermute_heads;
    if (rows % t.unpermute_heads != 0 || head_rows % 2 != 0)
      return error_status("tensor '" + t.name + "': " + std::to_string(rows) + " rows do not split into " +
                          std::to_string(t.unpermute_heads) + " heads of even size");
  }
  const int64_t out_row = row_bytes(*out_info, cols);
  out->resize(static_cast<size_t>(out_row * rows));
  uint8_t* dst = out->data();
  // rows [begin, end) through one f32 row buffer per thread
  std::vector<std::vector<float>> bufs(static_cast<size_t>(pool.n_threads()),
                                       std::vector<float>(static_cast<size_t>(cols)));
  auto convert_rows = [&](int thread, int64_t begin, int64_t end) {
    float* buf = bufs[static_cast<size_t>(thread)].data();
    for (int64_t r = begin; r < end; ++r) {
      int64_t src = r;
      if (head_rows > 0) {  // output row h*hs + 2i + j comes from row h*hs + j*hs/2 + i
        const int64_t h = r / head_rows, k = r % head_rows, i = k / 2, j = k % 2;
        src = h * head_rows + j * (head_rows / 2) + i;
      }
      decode_row(t, rows, cols, src, buf);
      kernels::quantize_row(target, buf, cols, dst + r * out_row, importance);
    }
  };
  // pieces of about 64k elements: a K-quant row of 2048 costs ~0.3 ms, so a
  // piece is long enough to hide the hand-out and short enough to balance
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / cols);
  // Bands of source rows, each band's pages let go once it is converted
  // (MappedFile::release_pages: nothing for memory that is not a read-only
  // file mapping), so the largest tensor (the 1B shape's f32 embedding, 1 GiB)
  // is not resident whole. Un-permuted heads read rows of other bands: one band.
  const int64_t in_row = row_bytes(*in_info, cols);
  const int64_t band = head_rows > 0 || per_element ? rows : std::max<int64_t>(1, band_bytes / in_row);
  for (int64_t b0 = 0; b0 < rows; b0 += band) {
    const int64_t n = std::min(band, rows - b0);
    pool.parallel_for_dynamic(
        n, [&](int thread, int64_t begin, int64_t end) { convert_rows(thread, b0 + begin, b0 + end); }, grain);
    MappedFile::release_pages(t.bytes.subspan(b0 * in_row, n * in_row));
  }
  return std::span<const uint8_t>(*out);
}

}  // namespace llmpack
