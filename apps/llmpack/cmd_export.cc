// `llmpack export`: a checkpoint (GGUF, llama2.c .bin, PyTorch .pt/.pth,
// Hugging Face folder) into a package (docs/CONTRACT.md E1-E5).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "cli_common.h"
#include "commands.h"
#include "export/exporter.h"

namespace llmpack::cli {
namespace {

// --dry_run's table: each tensor's name, types, shape and size in the package.
void print_plan(const ExportReport& r) {
  size_t name_w = 4;
  for (const PlannedTensor& t : r.tensors) name_w = std::max(name_w, t.name.size());
  std::printf("%-*s  %-6s -> %-6s  %-16s  %10s\n", static_cast<int>(name_w), "name", "source", "type", "shape", "MB");
  for (const PlannedTensor& t : r.tensors) {
    std::string shape;
    for (int64_t d : t.shape) shape += (shape.empty() ? "" : " x ") + std::to_string(d);
    std::printf("%-*s  %-6s -> %-6s  %-16s  %10.3f\n", static_cast<int>(name_w), t.name.c_str(), t.from.c_str(),
                t.to.c_str(), shape.c_str(), static_cast<double>(t.bytes) / 1e6);
  }
}

int execute(const ExportOptions& o) {
  if (o.threads > 0) note_threads_beyond_cpus(o.threads);
  const bool tty = isatty(fileno(stderr)) != 0;
  auto progress = [tty](size_t done, size_t total, uint64_t bytes) {
    if (!tty) return;
    std::fprintf(stderr, "\r[%zu/%zu tensors, %.1f MB]", done, total, static_cast<double>(bytes) / 1e6);
    if (done == total) std::fputc('\n', stderr);
    std::fflush(stderr);
  };
  auto report = export_package(o, progress, stderr_log_sink());
  if (!report.ok()) return fail(report.status().with_context("export"));
  if (o.dry_run) print_plan(*report);
  std::printf("%s\n", report->summary().c_str());
  return 0;
}

}  // namespace

void register_export(CLI::App& app, std::function<int()>& action) {
  auto* cmd = app.add_subcommand("export", "Write a package from a GGUF, llama2.c, PyTorch or Hugging Face checkpoint");
  auto o = std::make_shared<ExportOptions>();
  cmd->add_option("--checkpoint", o->checkpoint, "GGUF, llama2.c .bin, PyTorch .pt/.pth, or a Hugging Face folder")
      ->required();
  cmd->add_option("--params", o->params_path, "Meta params.json (PyTorch checkpoints without model_args)");
  cmd->add_option("--tokenizer_path", o->tokenizer_path, "tokenizer.bin, SentencePiece tokenizer.model, HF tokenizer.json(.gz), tiktoken file or a GGUF");
  cmd->add_option("-o,--output", o->output, "The package to write (.gguf); required unless --dry_run");
  cmd->add_option("--max_seq_length", o->max_seq_len, "S: tokens one forward call may take")->default_val(128);
  cmd->add_option("--max_context_length", o->max_context_len, "C: positions the KV cache holds (default S)");
  cmd->add_option("--kv_cache", o->kv_cache, "KV cache: in_graph, off_graph (chat needs it) or none")
      ->default_val("off_graph");
  auto dynamic_flag = std::make_shared<bool>(false);
  auto* dynamic = cmd->add_flag("--dynamic_shape", *dynamic_flag, "Each call takes 1..S tokens (the default)");
  auto* stat = cmd->add_flag("--static_shape", o->static_shape, "Each call takes exactly --static_chunk tokens");
  dynamic->excludes(stat);
  cmd->add_option("--static_chunk", o->static_chunk, "N: tokens per call with --static_shape (default 1)");
  cmd->add_option("--dtype", o->dtype,
                  "Weights: one type for every matrix, f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, "
                  "q4_k, q5_k, q6_k, iq4_nl, iq4_xs, iq1_s, iq1_m, iq2_xxs, iq2_xs, iq2_s (these five need "
                  "--imatrix), iq3_xxs, iq3_s (these seven keep the output and embedding in more bits); or a "
                  "llama-quantize mix: q2_k_s (needs --imatrix), q3_k_s, q3_k_m, "
                  "q3_k_l, q4_k_s, q4_k_m, q5_k_s, q5_k_m, iq2_m (needs --imatrix), iq3_xs, iq3_m (default: the "
                  "source's types)");
  cmd->add_flag("--llama_mix", o->llama_mix,
                "With a --dtype that names one type (q4_0, q2_k, iq2_xs, ...): write llama-quantize's file type of "
                "that name instead, with its per-tensor types (q4_0's output in Q6_K, iq2_xs's attn_v in Q2_K, ...)");
  cmd->add_option("--output_dtype", o->output_dtype,
                  "Type of the output matrix (the embedding when the model ties them), e.g. q6_k as llama.cpp's "
                  "q4_0 files have it (llama-quantize's --output-tensor-type)");
  cmd->add_option("--embedding_dtype", o->embedding_dtype,
                  "Type of token_embd.weight (llama-quantize's --token-embedding-type)");
  cmd->add_option("--tensor_dtype", o->tensor_dtypes,
                  "PATTERN=TYPE: tensors whose name the regular expression PATTERN finds get TYPE (repeatable; "
                  "the first that matches wins; llama-quantize's --tensor-type)")
      ->allow_extra_args(false);
  cmd->add_option("--imatrix", o->imatrix,
                  "An importance matrix (llama-imatrix's .gguf or .dat, or `llmpack imatrix`'s): the types that "
                  "search their scales (q4_0, q5_0, q4_1, q5_1, the k-quants, the iq types) weight each column's "
                  "error by the mean square of its activations (llama-quantize's --imatrix)");
  cmd->add_option("--name", o->name, "general.name to write");
  cmd->add_flag("--dry_run", o->dry_run,
                "Print every tensor's planned type and size and the total, and write nothing (llama-quantize's --dry-run)");
  cmd->add_option("-t,--cpu_threads", o->threads, "Threads that quantize the rows (default: one per performance core)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--token_bound", o->token_bound, "B override (legacy packages for tests)")->group("");
  cmd->callback([&action, o, dynamic_flag] { action = [o] { return execute(*o); }; });
}

}  // namespace llmpack::cli
