#include "export/export_options.h"

#include <algorithm>
#include <cctype>

namespace llmpack {
namespace {

constexpr int64_t kMaxPositions = int64_t{1} << 24;

Result<DTypePlan> parse_dtype_plan(const std::string& given) {
  DTypePlan plan;
  if (given.empty()) return plan;
  std::string d = given;
  std::transform(d.begin(), d.end(), d.begin(), [](unsigned char c) { return std::tolower(c); });
  plan.keep = false;
  plan.name = d;
  if (d == "f32") plan.matrix = DType::kF32;
  else if (d == "f16") plan.matrix = DType::kF16;
  else if (d == "bf16") plan.matrix = DType::kBF16;
  else if (d == "q8_0") plan.matrix = DType::kQ8_0;
  else if (d == "q4_0") plan.matrix = DType::kQ4_0;
  else if (d == "q4_1") plan.matrix = DType::kQ4_1;
  else if (d == "q5_0") plan.matrix = DType::kQ5_0;
  else if (d == "q5_1") plan.matrix = DType::kQ5_1;
  else if (d == "q2_k") plan.matrix = DType::kQ2_K;
  else if (d == "q3_k") plan.matrix = DType::kQ3_K;
  else if (d == "iq4_nl") plan.matrix = DType::kIQ4_NL;
  else if (d == "iq4_xs") plan.matrix = DType::kIQ4_XS;
  else if (d == "q4_k") plan.matrix = DType::kQ4_K;
  else if (d == "q5_k") plan.matrix = DType::kQ5_K;
  else if (d == "q6_k") plan.matrix = DType::kQ6_K;
  else if (d == "q3_k_m" || d == "q4_k_m" || d == "q5_k_m") {
    plan.matrix = d == "q3_k_m" ? DType::kQ3_K : d == "q4_k_m" ? DType::kQ4_K : DType::kQ5_K;
    plan.medium_mix = true;
  } else {
    return error_status("--dtype '" + given +
                        "' is not one of f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, "
                        "iq4_nl, iq4_xs, q3_k_m, q4_k_m, q5_k_m");
  }
  return plan;
}

}  // namespace

Result<PackageShape> resolve_export_options(const ExportOptions& o) {
  PackageShape p;
  if (o.checkpoint.empty()) return error_status("--checkpoint is required");
  if (o.output.empty()) return error_status("--output is required");
  LLMPACK_ASSIGN_OR_RETURN(p.dtype, parse_dtype_plan(o.dtype));
  if (o.max_seq_len <= 0 || o.max_seq_len > kMaxPositions)
    return error_status("--max_seq_length " + std::to_string(o.max_seq_len) + " is out of range 1.." +
                        std::to_string(kMaxPositions));
  p.max_seq_len = o.max_seq_len;
  p.max_context_len = o.max_context_len == 0 ? o.max_seq_len : o.max_context_len;
  if (p.max_context_len < 0 || p.max_context_len > kMaxPositions)
    return error_status("--max_context_length " + std::to_string(o.max_context_len) + " is out of range");
  if (p.max_context_len < p.max_seq_len)
    return error_status("--max_context_length " + std::to_string(p.max_context_len) + " is below --max_seq_length " +
                        std::to_string(p.max_seq_len) + " (the cache must hold at least one full call)");
  if (o.threads < 0 || o.threads > 1024)
    return error_status("--cpu_threads " + std::to_string(o.threads) + " is out of range 1..1024");
  if (o.kv_cache == "in_graph") p.kv_cache = KvCacheKind::kInGraph;
  else if (o.kv_cache == "off_graph") p.kv_cache = KvCacheKind::kOffGraph;
  else if (o.kv_cache == "none") p.kv_cache = KvCacheKind::kNone;
  else return error_status("--kv_cache '" + o.kv_cache + "' is not one of in_graph, off_graph, none");
  p.dynamic_shape = !o.static_shape;
  if (o.static_chunk != 0 && !o.static_shape)
    return error_status("--static_chunk " + std::to_string(o.static_chunk) + " needs --static_shape");
  const int64_t chunk = o.static_chunk == 0 ? 1 : o.static_chunk;
  if (o.static_shape && (chunk < 1 || chunk > p.max_seq_len))
    return error_status("--static_chunk " + std::to_string(chunk) + " is out of range 1..--max_seq_length " +
                        std::to_string(p.max_seq_len));
  if (p.kv_cache == KvCacheKind::kNone) {
    if (o.static_shape)
      return error_status("--static_shape needs a KV cache: without one every call takes the whole sequence");
    if (o.max_context_len != 0 && p.max_context_len != p.max_seq_len)
      return error_status("--kv_cache none keeps no positions between calls, so --max_context_length " +
                          std::to_string(p.max_context_len) + " must equal --max_seq_length " +
                          std::to_string(p.max_seq_len));
    p.max_context_len = p.max_seq_len;
  }
  p.token_bound = o.static_shape ? chunk : p.max_seq_len;
  if (o.token_bound != 0) {
    if (o.token_bound < 0 || o.token_bound > p.max_context_len)
      return error_status("--token_bound " + std::to_string(o.token_bound) + " is out of range 1.." +
                          std::to_string(p.max_context_len));
    p.token_bound = o.token_bound;
  }
  return p;
}

uint32_t gguf_file_type(const DTypePlan& plan) {
  if (plan.medium_mix)  // MOSTLY_Q3_K_M, MOSTLY_Q4_K_M, MOSTLY_Q5_K_M
    return plan.matrix == DType::kQ3_K ? 12 : plan.matrix == DType::kQ4_K ? 15 : 17;
  switch (plan.matrix) {
    case DType::kF16: return 1;
    case DType::kQ4_0: return 2;
    case DType::kQ8_0: return 7;
    case DType::kQ4_1: return 3;   // MOSTLY_Q4_1
    case DType::kQ5_0: return 8;   // MOSTLY_Q5_0
    case DType::kQ5_1: return 9;   // MOSTLY_Q5_1
    case DType::kQ2_K: return 10;  // MOSTLY_Q2_K
    case DType::kQ3_K: return 11;  // MOSTLY_Q3_K_S
    case DType::kIQ4_NL: return 25;  // MOSTLY_IQ4_NL
    case DType::kIQ4_XS: return 30;  // MOSTLY_IQ4_XS
    case DType::kQ4_K: return 14;  // llama.cpp's MOSTLY_Q4_K_S: Q4_K matrices
    case DType::kQ5_K: return 16;  // MOSTLY_Q5_K_S
    case DType::kQ6_K: return 18;  // MOSTLY_Q6_K
    case DType::kBF16: return 32;
    default: return 0;
  }
}

}  // namespace llmpack
