#include "export/exporter.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "core/cpu_topology.h"
#include "core/thread_pool.h"
#include "export/model_source.h"
#include "export/tensor_convert.h"
#include "export/tokenizer_metadata_bpe.h"
#include "format/imatrix_file.h"
#include "kernels/iq_blocks.h"

namespace llmpack {
namespace {

void write_hyperparameters(GgufWriter& w, const SourceHyperparameters& h, const std::string& name) {
  const std::string a = h.arch + ".";
  w.set_string("general.architecture", h.arch);
  w.set_string("general.name", name);
  w.set_u32(a + "embedding_length", static_cast<uint32_t>(h.dim));
  w.set_u32(a + "block_count", static_cast<uint32_t>(h.n_layers));
  w.set_u32(a + "feed_forward_length", static_cast<uint32_t>(h.hidden_dim));
  w.set_u32(a + "attention.head_count", static_cast<uint32_t>(h.n_heads));
  w.set_u32(a + "attention.head_count_kv", static_cast<uint32_t>(h.n_kv_heads));
  w.set_f32(a + "attention.layer_norm_rms_epsilon", static_cast<float>(h.norm_eps));
  w.set_f32(a + "rope.freq_base", static_cast<float>(h.rope_theta));
  w.set_u32(a + "rope.dimension_count", static_cast<uint32_t>(h.head_dim));
  if (h.rope_linear_factor != 1.0) {
    w.set_string(a + "rope.scaling.type", "linear");
    w.set_f32(a + "rope.scaling.factor", static_cast<float>(h.rope_linear_factor));
  }
  if (const SourceHyperparameters::Yarn& y = h.yarn; y.factor > 0) {
    w.set_string(a + "rope.scaling.type", "yarn");
    w.set_f32(a + "rope.scaling.factor", static_cast<float>(y.factor));
    // Always written: the package's context_length is C, not the trained length YaRN counts from.
    w.set_u32(a + "rope.scaling.original_context_length", static_cast<uint32_t>(y.original_context));
    if (y.attn_factor != 1.0) w.set_f32(a + "rope.scaling.attn_factor", static_cast<float>(y.attn_factor));
    if (y.beta_fast != 32.0) w.set_f32(a + "rope.scaling.yarn_beta_fast", static_cast<float>(y.beta_fast));
    if (y.beta_slow != 1.0) w.set_f32(a + "rope.scaling.yarn_beta_slow", static_cast<float>(y.beta_slow));
  }
  w.set_u32(a + "vocab_size", static_cast<uint32_t>(h.vocab_size));
  if (h.head_dim * h.n_heads != h.dim) {
    w.set_u32(a + "attention.key_length", static_cast<uint32_t>(h.head_dim));
    w.set_u32(a + "attention.value_length", static_cast<uint32_t>(h.head_dim));
  }
}

void write_contract(GgufWriter& w, const PackageShape& p, const std::vector<int64_t>& eos_ids) {
  namespace k = contract_keys;
  w.set_u32(std::string(k::kVersion), 1);
  w.set_u32(std::string(k::kMaxSeqLen), static_cast<uint32_t>(p.max_seq_len));
  w.set_u32(std::string(k::kMaxContextLen), static_cast<uint32_t>(p.max_context_len));
  w.set_u32(std::string(k::kTokenBound), static_cast<uint32_t>(p.token_bound));
  w.set_bool(std::string(k::kDynamicShape), p.dynamic_shape);
  w.set_bool(std::string(k::kUseKvCache), p.kv_cache != KvCacheKind::kNone);
  w.set_string(std::string(k::kKvCache), std::string(kv_cache_kind_name(p.kv_cache)));
  std::vector<int32_t> ids(eos_ids.begin(), eos_ids.end());
  w.set_i32_array(std::string(k::kEosIds), ids);
  w.set_string(std::string(k::kPositionInput), "start_pos");
}

// The tokenizer to package: --tokenizer_path, else the source's own, else
// one found beside the weights.
Result<TokenizerMetadata> choose_tokenizer(const ExportOptions& o, const ModelSource& s) {
  if (!o.tokenizer_path.empty()) return read_tokenizer_metadata(o.tokenizer_path);
  if (s.tokenizer) return *s.tokenizer;
  if (!s.tokenizer_file.empty()) return read_tokenizer_metadata(s.tokenizer_file);
  if (!s.tokenizer_json.empty()) return read_tokenizer_metadata(s.tokenizer_json);
  return error_status("the " + s.kind + " checkpoint carries no tokenizer: pass --tokenizer_path "
                      "(tokenizer.bin, tokenizer.model, tokenizer.json, a tiktoken file or a GGUF)");
}

std::string megabytes(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

// Where the importances came from, under llama-quantize's keys.
void write_imatrix_provenance(GgufWriter& w, const std::string& path, const ImportanceMatrix& m) {
  w.set_string("quantize.imatrix.file", path);
  if (!m.datasets.empty()) w.set_string("quantize.imatrix.dataset", m.datasets.back());
  w.set_i32("quantize.imatrix.entries_count", static_cast<int32_t>(m.entries.size()));
  w.set_i32("quantize.imatrix.chunks_count", static_cast<int32_t>(m.chunk_count));
}

// The types whose quantizers search their scales, and so weight their error
// by an importance matrix (kernels::quantize_row).
bool searches_scales(DType t) {
  if (kernels::is_codebook_type(t)) return true;
  switch (t) {
    case DType::kQ4_0: case DType::kQ5_0: case DType::kQ4_1: case DType::kQ5_1:
    case DType::kQ2_K: case DType::kQ3_K: case DType::kQ4_K:
    case DType::kQ5_K: case DType::kQ6_K: case DType::kIQ4_NL: case DType::kIQ4_XS:
      return true;
    default:
      return false;
  }
}

// What --imatrix gives the export: each covered matrix's importances (kept
// until the writer has converted it), and how many matrices they reached.
struct ImportanceUse {
  const ImportanceMatrix* imatrix = nullptr;
  std::map<std::string, std::vector<float>, std::less<>> by_tensor;
  int searched = 0;                    // matrices written in a type that searches
  std::string first_uncovered;         // one of them without an entry
};

// The importances `t` is quantized to `type` with (nullptr: none). An entry
// whose length is not the tensor's row length was computed on another model.
// The 1- and 2-bit codebook types (and Q2_K in the q2_k_s mix) are written
// only with importances, as llama-quantize refuses them without
// (mix_needs_importance): with so few codebook entries a group of 8 weights,
// which weights may move decides most of the error.
Status missing_importance(const SourceTensor& t, DType type, bool have_file) {
  return error_status("'" + t.name + "' is to be written as " + std::string(dtype_name(type)) +
                      ", which needs an importance matrix entry for it (1- and 2-bit types quantized "
                      "without one lose most of the model), but " +
                      (have_file ? "the --imatrix file has none for it (llmpack imatrix --process_output records the "
                                   "output matrix; or give this tensor another type with --tensor_dtype)"
                                 : "no --imatrix was given (make one with llmpack imatrix -m MODEL -f TEXT)"));
}

Result<const float*> importance_for(const SourceTensor& t, DType type, const LlamaFileType* mix,
                                   ImportanceUse* use) {
  if (type == t.dtype || t.ne.size() < 2) return nullptr;
  const bool needed = mix_needs_importance(type, mix, t.name);
  if (use->imatrix == nullptr && needed) return missing_importance(t, type, false);
  if (use->imatrix == nullptr || !searches_scales(type)) return nullptr;
  ++use->searched;
  const ImatrixEntry* entry = use->imatrix->find(t.name);
  if (entry == nullptr) {
    if (needed) return missing_importance(t, type, true);
    if (use->first_uncovered.empty()) use->first_uncovered = t.name;
    return nullptr;
  }
  if (static_cast<int64_t>(entry->sum_sq.size()) != t.ne[0])
    return error_status("--imatrix: '" + t.name + "' has " + std::to_string(entry->sum_sq.size()) +
                        " columns in the importance matrix but " + std::to_string(t.ne[0]) +
                        " in the model (was it computed on another model?)");
  return use->by_tensor.emplace(t.name, entry->mean_sq()).first->second.data();
}

// The notice of what the importances reached; an error where the file names
// none of the model's matrices (a file of another model, or of other names).
// A file of this model may still cover none of the matrices this export
// searches (only the output matrix in `--dtype q8_0 --output_dtype q6_k`,
// which imatrices leave out): a notice then.
Status report_importance_use(const ImportanceUse& use, const ModelSource& s, ExportReport* report) {
  if (use.imatrix == nullptr || use.searched == 0) return ok_status();
  const int used = static_cast<int>(use.by_tensor.size());
  const bool names_this_model = std::any_of(use.imatrix->entries.begin(), use.imatrix->entries.end(),
                                            [&](const auto& e) { return s.find(e.first) != nullptr; });
  if (used == 0 && !names_this_model) {
    const std::string example = use.imatrix->entries.empty() ? "none" : "'" + use.imatrix->entries.begin()->first + "'";
    return error_status("--imatrix: no entry for any matrix this export quantizes (expected names such as '" +
                        use.first_uncovered + "'; the file has " + std::to_string(use.imatrix->entries.size()) +
                        " entries, e.g. " + example + ")");
  }
  std::string note = "--imatrix: importances for " + std::to_string(used) + " of the " + std::to_string(use.searched) +
                     " matrices whose types search their scales";
  if (used < use.searched) note += "; the others (e.g. " + use.first_uncovered + ") quantized without";
  report->notices.push_back(note);
  return ok_status();
}

// Plans every tensor's type and hands the writer a producer that converts it
// when the file reaches it, into `*buffer` (one buffer for every tensor: the
// writer has copied a tensor's bytes out before it asks for the next): a 4.7
// GiB f32 source exported to q4_k_m peaked at 5.3 GiB resident when every
// converted tensor waited for the write. convert_tensor lets a converted
// tensor's source pages go band by band; a tensor written as it is (the
// source's own bytes) is let go here, once the next one is asked for.
Status add_tensors(GgufWriter& w, const ModelSource& s, const DTypePlan& plan, std::vector<uint8_t>* buffer,
                   ThreadPool& pool, bool dry_run, ImportanceUse* importances, ExportReport* report) {
  // (what asked, the type written) -> (count, a row length)
  std::map<std::pair<std::string, std::string>, std::pair<int, int64_t>> fallbacks;
  std::map<std::string, int> requantized;  // a block type of the source -> matrices converted from it
  const std::string output_name = s.find("output.weight") ? "output.weight" : "token_embd.weight";
  for (size_t i = 0; i < s.tensors.size(); ++i) {
    const SourceTensor& t = s.tensors[i];
    const TensorTypeChoice choice = plan_tensor_type(t, plan, s.hp, output_name);
    const DType type = choice.type;
    if (choice.fell_back) {
      auto& f = fallbacks[{choice.asked_by, std::string(dtype_name(type))}];
      ++f.first;
      f.second = t.ne[0];
    }
    if (const auto info = dtype_info(t.dtype); type != t.dtype && info && info->block_elems > 1)
      ++requantized[std::string(dtype_name(t.dtype))];
    LLMPACK_ASSIGN_OR_RETURN(const float* importance, importance_for(t, type, plan.mix, importances));
    PlannedTensor planned{t.name, std::string(dtype_name(t.dtype)), std::string(dtype_name(type)), t.ne, 0};
    if (const auto info = dtype_info(type); info && !t.ne.empty()) {
      int64_t rows = 1;
      for (size_t d = 1; d < t.ne.size(); ++d) rows *= t.ne[d];
      planned.bytes = static_cast<uint64_t>(row_bytes(*info, t.ne[0]) * rows);
    }
    report->tensor_bytes += planned.bytes;
    report->tensors.push_back(std::move(planned));
    const SourceTensor* source = &t;
    const SourceTensor* previous = i > 0 ? &s.tensors[i - 1] : nullptr;  // written by now
    if (!dry_run) {
      LLMPACK_RETURN_IF_ERROR(w.add_tensor(t.name, type, t.ne, [=, &pool]() {
        if (previous != nullptr) MappedFile::release_pages(previous->bytes);
        return convert_tensor(*source, type, buffer, pool, kConvertBandBytes, importance);
      }));
    }
    ++report->dtype_counts[std::string(dtype_name(type))];
    ++report->n_tensors;
  }
  for (const auto& [key, f] : fallbacks)
    report->notices.push_back(std::to_string(f.first) + (f.first == 1 ? " matrix" : " matrices") +
                              " with rows that do not fit " + key.first + " blocks (e.g. rows of " +
                              std::to_string(f.second) + ") written as " + key.second);
  if (!requantized.empty()) {
    int n = 0;
    std::string from;
    for (const auto& [type, count] : requantized) n += count, from += (from.empty() ? "" : ", ") + type;
    report->notices.push_back(std::to_string(n) + (n == 1 ? " matrix" : " matrices") + " requantized from " + from +
                              ": each keeps the rounding error of its first quantization; quantizing the f32, f16 or "
                              "bf16 weights gives the better file");
  }
  return report_importance_use(*importances, s, report);
}

// Refused before any work: an export can take minutes, and its writer only
// meets a bad --output at the end.
Status check_output_path(const std::string& output) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (output.empty()) return error_status("--output is empty, expected the path of the .gguf file to write");
  if (fs::is_directory(output, ec))
    return error_status("--output '" + output + "' is a directory, expected the path of the .gguf file to write");
  const fs::path folder = fs::path(output).parent_path();
  if (!folder.empty() && !fs::is_directory(folder, ec))
    return error_status("--output '" + output + "': the folder '" + folder.string() + "' does not exist");
  return ok_status();
}

}  // namespace

std::string ExportReport::summary() const {
  std::string mix;
  for (const auto& [type, n] : dtype_counts) mix += (mix.empty() ? "" : ", ") + type + " " + std::to_string(n);
  if (dry_run)
    return "dry run: " + std::to_string(n_tensors) + " tensors (" + mix + "), " + megabytes(tensor_bytes) +
           " of tensor data, S " + std::to_string(shape.max_seq_len) + ", C " + std::to_string(shape.max_context_len) +
           ", B " + std::to_string(shape.token_bound) + "; nothing written";
  return "wrote " + output + ": " + megabytes(file_bytes) + ", " + std::to_string(n_tensors) + " tensors (" + mix +
         "), S " + std::to_string(shape.max_seq_len) + ", C " + std::to_string(shape.max_context_len) + ", B " +
         std::to_string(shape.token_bound) + ", " + (shape.dynamic_shape ? "dynamic" : "static") + " shape, " +
         std::string(kv_cache_kind_name(shape.kv_cache)) + " KV cache";
}

Result<ExportReport> export_package(const ExportOptions& o, const GgufWriter::Progress& progress, const LogSink& log) {
  ExportReport report;
  LLMPACK_ASSIGN_OR_RETURN(report.shape, resolve_export_options(o));
  const PackageShape& p = report.shape;
  report.output = o.output;
  report.dry_run = o.dry_run;
  if (!o.dry_run) LLMPACK_RETURN_IF_ERROR(check_output_path(o.output));
  LLMPACK_ASSIGN_OR_RETURN(ModelSource src, open_model_source(o.checkpoint, o.params_path));
  report.source_kind = src.kind;
  report.notices = src.notices;
  const std::string source_context = src.kind + " checkpoint " + o.checkpoint;
  LLMPACK_RETURN_IF_ERROR(check_source_hyperparameters(src.hp).with_context(source_context));
  LLMPACK_RETURN_IF_ERROR(check_source_tensors(src).with_context(source_context));
  auto tok = choose_tokenizer(o, src);
  if (!tok.ok()) return tok.status();
  report.tokenizer = tok->description;
  const int64_t tokenizer_vocab = tok->vocab_size;
  if (pad_bpe_tokenizer_metadata(&*tok, src.hp.vocab_size))
    report.notices.push_back("the tokenizer's " + std::to_string(tokenizer_vocab) + " tokens were padded to the " +
                             "model's " + std::to_string(src.hp.vocab_size) + " with unused [PAD<id>] tokens");
  if (tok->vocab_size > src.hp.vocab_size)
    return error_status("the tokenizer has " + std::to_string(tok->vocab_size) + " tokens but the model's embedding " +
                        "only " + std::to_string(src.hp.vocab_size) + " rows");
  if (src.hp.context_length > 0 && p.max_context_len > src.hp.context_length)
    report.notices.push_back("--max_context_length " + std::to_string(p.max_context_len) +
                             " exceeds the " + std::to_string(src.hp.context_length) + " positions the model was trained for");

  GgufWriter w;
  for (const auto& [key, value] : src.metadata) w.set(key, value);
  if (src.metadata.empty()) write_hyperparameters(w, src.hp, src.name);
  if (!o.name.empty()) w.set_string("general.name", o.name);
  if (!p.dtype.keep) w.set_u32("general.file_type", gguf_file_type(p.dtype));
  w.set_u32(src.hp.arch + ".context_length", static_cast<uint32_t>(p.max_context_len));
  for (const auto& [key, value] : tok->keys) w.set(key, value);
  if (src.chat_template) w.set_string("tokenizer.chat_template", *src.chat_template);
  std::vector<int64_t> eos;
  if (tok->eos_id >= 0) eos.push_back(tok->eos_id);
  for (int64_t id : src.eos_ids)
    if (id >= 0 && id < src.hp.vocab_size && std::find(eos.begin(), eos.end(), id) == eos.end()) eos.push_back(id);
  write_contract(w, p, eos);

  ImportanceMatrix imatrix;
  ImportanceUse importances;
  if (!o.imatrix.empty()) {
    auto read = read_imatrix(o.imatrix);
    if (!read.ok()) return read.status().with_context("--imatrix");
    imatrix = std::move(*read);
    importances.imatrix = &imatrix;
    write_imatrix_provenance(w, o.imatrix, imatrix);
  }
  std::vector<uint8_t> buffer;
  ThreadPool pool(o.threads > 0 ? o.threads : default_threads());
  LLMPACK_RETURN_IF_ERROR(add_tensors(w, src, p.dtype, &buffer, pool, o.dry_run, &importances, &report));
  for (const auto& n : report.notices) log(LogLevel::kWarning, n);
  if (o.dry_run) return report;
  LLMPACK_RETURN_IF_ERROR(w.write(o.output, progress).with_context("writing " + o.output));
  std::error_code ec;
  report.file_bytes = std::filesystem::file_size(o.output, ec);
  return report;
}

}  // namespace llmpack
