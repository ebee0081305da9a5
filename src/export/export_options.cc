#include "export/export_options.h"

#include <algorithm>
#include <cctype>
#include <utility>

namespace llmpack {
namespace {

constexpr int64_t kMaxPositions = int64_t{1} << 24;

constexpr const char* kSingleTypes =
    "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl, iq4_xs, iq2_xxs, iq2_xs, "
    "iq2_s, iq3_xxs, iq3_s, iq1_s, iq1_m";

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// One weight type by its llama.cpp name ("q6_k"), or nothing.
std::optional<DType> single_type(const std::string& name) {
  static const std::pair<const char*, DType> kTypes[] = {
      {"f32", DType::kF32},    {"f16", DType::kF16},       {"bf16", DType::kBF16},    {"q8_0", DType::kQ8_0},
      {"q4_0", DType::kQ4_0},  {"q4_1", DType::kQ4_1},     {"q5_0", DType::kQ5_0},    {"q5_1", DType::kQ5_1},
      {"q2_k", DType::kQ2_K},  {"q3_k", DType::kQ3_K},     {"q4_k", DType::kQ4_K},    {"q5_k", DType::kQ5_K},
      {"q6_k", DType::kQ6_K},  {"iq4_nl", DType::kIQ4_NL}, {"iq4_xs", DType::kIQ4_XS}, {"iq2_xxs", DType::kIQ2_XXS},
      {"iq2_xs", DType::kIQ2_XS}, {"iq2_s", DType::kIQ2_S}, {"iq3_xxs", DType::kIQ3_XXS}, {"iq3_s", DType::kIQ3_S},
      {"iq1_s", DType::kIQ1_S},   {"iq1_m", DType::kIQ1_M}};
  for (const auto& [n, t] : kTypes)
    if (name == n) return t;
  return std::nullopt;
}

// --dtype: a single type, or one of llama-quantize's mixes (q4_k_m, iq3_m,
// ...); with --llama_mix a single type's name is its llama-quantize file type.
Result<DTypePlan> parse_dtype_plan(const std::string& given, bool llama_mix) {
  DTypePlan plan;
  if (given.empty()) {
    if (llama_mix) return error_status("--llama_mix needs --dtype (the llama-quantize file type to write)");
    return plan;
  }
  const std::string d = lower(given);
  plan.keep = false;
  plan.name = d;
  const auto single = single_type(d);
  if (is_llama_mix_only_name(d) || (llama_mix && single && find_llama_file_type(d))) {
    plan.mix = find_llama_file_type(d);
    plan.matrix = plan.mix->base;
  } else if (single) {
    // f32, f16 and bf16 files have no rules in llama-quantize either
    plan.matrix = *single;
  } else {
    return error_status("--dtype '" + given + "' is not one of " + kSingleTypes + ", " + llama_mix_only_names());
  }
  return plan;
}

Result<TypeOverride> parse_override_type(const std::string& flag, const std::string& type_name,
                                         const std::string& given) {
  auto t = single_type(lower(type_name));
  if (!t) return error_status(flag + " '" + given + "': '" + type_name + "' is not one of " + kSingleTypes);
  return TypeOverride{*t, flag + " " + given, nullptr};
}

// --tensor_dtype PATTERN=TYPE (the last '=' splits, so a pattern may hold one).
Result<TypeOverride> parse_tensor_rule(const std::string& given) {
  const size_t eq = given.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == given.size())
    return error_status("--tensor_dtype '" + given + "' is not PATTERN=TYPE (e.g. attn_v=q8_0)");
  LLMPACK_ASSIGN_OR_RETURN(TypeOverride rule,
                           parse_override_type("--tensor_dtype", given.substr(eq + 1), given));
  try {
    rule.pattern = std::make_shared<const std::regex>(given.substr(0, eq), std::regex::ECMAScript | std::regex::icase);
  } catch (const std::regex_error& e) {
    return error_status("--tensor_dtype '" + given + "': '" + given.substr(0, eq) +
                        "' is not a regular expression (" + e.what() + ")");
  }
  return rule;
}

Status parse_overrides(const ExportOptions& o, DTypePlan* plan) {
  if (!o.output_dtype.empty()) {
    LLMPACK_ASSIGN_OR_RETURN(plan->output, parse_override_type("--output_dtype", o.output_dtype, o.output_dtype));
  }
  if (!o.embedding_dtype.empty()) {
    LLMPACK_ASSIGN_OR_RETURN(plan->embedding,
                             parse_override_type("--embedding_dtype", o.embedding_dtype, o.embedding_dtype));
  }
  for (const std::string& rule : o.tensor_dtypes) {
    LLMPACK_ASSIGN_OR_RETURN(TypeOverride r, parse_tensor_rule(rule));
    plan->tensor_rules.push_back(std::move(r));
  }
  return ok_status();
}

}  // namespace

Result<PackageShape> resolve_export_options(const ExportOptions& o) {
  PackageShape p;
  if (o.checkpoint.empty()) return error_status("--checkpoint is required");
  if (o.output.empty() && !o.dry_run) return error_status("--output is required");
  LLMPACK_ASSIGN_OR_RETURN(p.dtype, parse_dtype_plan(o.dtype, o.llama_mix));
  p.dtype.has_imatrix = !o.imatrix.empty();
  LLMPACK_RETURN_IF_ERROR(parse_overrides(o, &p.dtype));
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
  if (plan.mix != nullptr) return plan.mix->file_type;
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
    case DType::kIQ2_XXS: return 19;  // MOSTLY_IQ2_XXS
    case DType::kIQ2_XS: return 20;   // MOSTLY_IQ2_XS
    case DType::kIQ3_XXS: return 23;  // MOSTLY_IQ3_XXS
    case DType::kIQ3_S: return 26;    // MOSTLY_IQ3_S
    case DType::kIQ2_S: return 28;    // MOSTLY_IQ2_S
    case DType::kIQ1_S: return 24;    // MOSTLY_IQ1_S
    case DType::kIQ1_M: return 31;    // MOSTLY_IQ1_M
    case DType::kQ4_K: return 14;  // llama.cpp's MOSTLY_Q4_K_S: Q4_K matrices
    case DType::kQ5_K: return 16;  // MOSTLY_Q5_K_S
    case DType::kQ6_K: return 18;  // MOSTLY_Q6_K
    case DType::kBF16: return 32;
    default: return 0;
  }
}

}  // namespace llmpack
