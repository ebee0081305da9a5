// `llmpack imatrix -m MODEL -f TEXT [-c 512] [--chunks N] [--in_file F]... [--output_frequency N] [-o FILE]`:
// an importance matrix over a calibration text, as llama-imatrix computes
// one (non-overlapping windows of -c tokens, every row of each counted), with
// the running perplexity line it prints, written in llama.cpp's GGUF form or
// its legacy .dat form for `llmpack export --imatrix` or llama-quantize.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "cli_common.h"
#include "commands.h"
#include "core/file_text.h"
#include "format/imatrix_file.h"
#include "runner/imatrix.h"

namespace llmpack::cli {
namespace {

struct ImatrixFlags {
  ModelOptions model;
  std::string text_file;
  int64_t context = 512;
  int64_t chunks = -1;
  std::string output = "imatrix.gguf";
  std::string output_format;  // gguf | dat; empty: by -o's extension (.dat: dat)
  bool process_output = false;
  std::vector<std::string> in_files;  // --in_file: imatrix files added to what the run computes
  int64_t output_frequency = 10;      // windows between saves of -o during the run (0: at the end only)
  std::string kv_dtype{kv_dtype_name(kDefaultKvDtype)};
  bool kv_dtype_given = false;
};

// Refuses an -o that cannot be written before the text is run, not after:
// a folder, or a file in a folder that is missing or not writable.
Status check_output_path(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return error_status("-o " + path + " is a folder, expected a file to write");
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  if (!fs::is_directory(dir, ec))
    return error_status("-o " + path + ": cannot write there, the folder " + dir.string() + " does not exist");
  if (access(dir.c_str(), W_OK) != 0)
    return error_status("-o " + path + ": cannot write in " + dir.string() + ": " + std::strerror(errno));
  return ok_status();
}

bool writes_legacy(const ImatrixFlags& o) {
  if (!o.output_format.empty()) return o.output_format == "dat";
  return o.output.ends_with(".dat");
}

// The --in_file imatrices added together (llama-imatrix's --in-file).
Result<ImportanceMatrix> read_in_files(const std::vector<std::string>& paths) {
  ImportanceMatrix sum;
  for (const std::string& path : paths) {
    auto m = read_imatrix(path);
    if (!m.ok()) return m.status().with_context("--in_file");
    if (auto status = merge_imatrix(&sum, *m); !status.ok()) return status.with_context("--in_file " + path);
  }
  return sum;
}

Status write_result(const ImatrixFlags& o, const ImportanceMatrix& m) {
  if (auto status = write_imatrix(o.output, m, writes_legacy(o)); !status.ok()) return status.with_context("-o");
  return ok_status();
}

// --in_file without -m and -f: the files combined, nothing run.
int combine_only(const ImatrixFlags& o) {
  auto sum = read_in_files(o.in_files);
  if (!sum.ok()) return fail(sum.status());
  if (auto status = check_output_path(o.output); !status.ok()) return fail(status);
  if (auto status = write_result(o, *sum); !status.ok()) return fail(status);
  std::printf("imatrix: %zu entries from %zu files (%lld windows) written to %s\n", sum->entries.size(),
              o.in_files.size(), static_cast<long long>(sum->chunk_count), o.output.c_str());
  return 0;
}

int execute(ImatrixFlags& o) {
  if (o.model.model_path.empty() && o.text_file.empty() && !o.in_files.empty()) return combine_only(o);
  if (o.model.model_path.empty() || o.text_file.empty())
    return fail("imatrix needs -m MODEL and -f TEXT (or only --in_file files to combine); missing: " +
                std::string(o.model.model_path.empty() ? "-m" : "-f"));
  auto in_sum = read_in_files(o.in_files);
  if (!in_sum.ok()) return fail(in_sum.status());
  auto text = read_file_text(o.text_file);
  if (!text.ok()) return fail(text.status().with_context("-f"));
  if (auto status = check_output_path(o.output); !status.ok()) return fail(status);
  ProgramOptions options;
  auto loaded = load_for_windows(o.model, o.context, o.kv_dtype, o.kv_dtype_given, &options);
  if (!loaded.ok()) return fail(loaded.status());
  std::fprintf(stderr, "imatrix: windows of %lld tokens, every row counted%s; perplexity of each second half\n",
               static_cast<long long>(o.context), o.process_output ? ", the output matrix too" : "");
  const bool scored = o.context >= 3;  // a window of 2 scores no position
  const ImatrixOptions run{o.context, o.chunks, o.process_output, o.text_file};
  const ImatrixSaving saving{o.output_frequency, [&o, &in_sum](const ImportanceMatrix& so_far) {
                               ImportanceMatrix m = *in_sum;
                               if (auto status = merge_imatrix(&m, so_far); !status.ok())
                                 return status.with_context("--in_file");
                               return write_result(o, m);
                             }};
  auto result = compute_imatrix(*loaded->program, *loaded->tokenizer, *text, run,
                                scored ? running_line(4) : std::function<void(int64_t, double)>(), saving);
  if (!result.ok()) return scored ? fail_after_running_line(result.status()) : fail(result.status());
  if (scored) std::printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", result->ppl, result->ppl_error);
  ImportanceMatrix& m = result->imatrix;
  if (!o.in_files.empty()) {
    // The files' sums first, then this run's: datasets in that order, as llama-imatrix lists them.
    if (auto status = merge_imatrix(&*in_sum, m); !status.ok()) return fail(status.with_context("--in_file"));
    m = std::move(*in_sum);
  }
  if (auto status = write_result(o, m); !status.ok()) return fail(status);
  std::printf("imatrix: %zu entries from %lld windows of %lld tokens%s written to %s\n", m.entries.size(),
              static_cast<long long>(result->n_windows), static_cast<long long>(o.context),
              o.in_files.empty() ? "" : (" and " + std::to_string(o.in_files.size()) + " --in_file").c_str(),
              o.output.c_str());
  return 0;
}

}  // namespace

void register_imatrix(CLI::App& app, std::function<int()>& action) {
  auto* cmd = app.add_subcommand("imatrix", "Importance matrix of a model over a calibration text (llama-imatrix)");
  auto o = std::make_shared<ImatrixFlags>();
  add_model_options(*cmd, o->model);
  cmd->get_option("--model_path")->required(false);  // --in_file alone combines files
  cmd->add_option("-f,--file", o->text_file, "Calibration text file");
  cmd->add_option("--in_file", o->in_files,
                  "An imatrix file (GGUF or .dat) to add to the result (repeatable; llama-imatrix's --in-file); "
                  "with neither -m nor -f, the files are only combined");
  cmd->add_option("-c,--ctx_size", o->context, "Window (chunk) size in tokens")
      ->default_val(512)
      ->check(CLI::Range(2, 1 << 20));
  cmd->add_option("--chunks", o->chunks, "Windows to run at most (-1: every whole window of the text)")
      ->default_val(-1)
      ->check(CLI::Range(-1, 1 << 30));  // 0 is refused by compute_imatrix
  cmd->add_option("-o,--output,--output_file", o->output, "File to write")->default_val("imatrix.gguf");
  cmd->add_option("--output_format", o->output_format,
                  "gguf (llama.cpp's current form) or dat (its legacy form); default: dat for an -o ending in "
                  ".dat, else gguf")
      ->check(CLI::IsMember({"gguf", "dat"}));
  cmd->add_option("--output_frequency", o->output_frequency,
                  "Write -o every N windows during the run, so an interrupted run keeps what it computed "
                  "(0: at the end only; llama-imatrix's --output-frequency)")
      ->default_val(10)
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  cmd->add_flag("--process_output", o->process_output,
                "Also collect the output matrix's input (output.weight, or token_embd.weight when tied)");
  CLI::Option* kv_dtype = add_kv_dtype_option(*cmd, o->kv_dtype);
  cmd->callback([&action, o, kv_dtype] {
    o->kv_dtype_given = kv_dtype->count() > 0;
    action = [o] { return execute(*o); };
  });
}

}  // namespace llmpack::cli
