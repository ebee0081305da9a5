// An importance matrix computed over a calibration text, the way
// llama-imatrix computes one: the text is tokenized once and cut into
// non-overlapping windows of `context` tokens (BOS in place of each one's
// first token, as perplexity cuts them), every window runs through forward
// with the activation statistics bound, and every row of every window is
// counted. The second half of each window is scored as perplexity scores it,
// for the running estimate llama-imatrix prints too.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "engine/llama_program.h"
#include "format/imatrix_file.h"
#include "tokenizer/tokenizer.h"

namespace llmpack {

struct ImatrixOptions {
  int64_t context = 512;        // tokens per window (chunk_size), at least 2
  int64_t max_chunks = -1;      // windows to run at most; -1: every whole window of the text
  bool process_output = false;  // also the output matrix (llama-imatrix's --process-output)
  std::string dataset;          // the calibration file's name, recorded in imatrix.datasets
};

// Every `every` windows (0: never) before the last, `on_save` gets the matrix
// so far (llama-imatrix's --output-frequency: a long run interrupted keeps
// what it computed); an error from it stops the run.
struct ImatrixSaving {
  int64_t every = 0;
  std::function<Status(const ImportanceMatrix&)> on_save;
};

struct ImatrixResult {
  ImportanceMatrix imatrix;
  int64_t n_windows = 0;  // windows run (imatrix.chunk_count)
  int64_t n_scored = 0;   // positions scored for the perplexity (none for windows of 2)
  double ppl = 0;         // exp(mean negative log-likelihood) over them
  double ppl_error = 0;   // ppl x standard error of the mean NLL
};

// `on_window(index, running_ppl)` is called after each window. Needs a program
// whose forward can return `context` rows of logits (ProgramOptions::logits_rows):
// the output matrix's input is every row, as llama-imatrix computes every row's logits.
Result<ImatrixResult> compute_imatrix(LlamaProgram& program, const Tokenizer& tokenizer, std::string_view text,
                                      const ImatrixOptions& options,
                                      const std::function<void(int64_t, double)>& on_window = nullptr,
                                      const ImatrixSaving& saving = {});

}  // namespace llmpack
