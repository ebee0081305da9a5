// `llmpack export`: any supported checkpoint -> one GGUF package carrying the
// weights, the tokenizer, the chat template and the contract keys
// (docs/CONTRACT.md P1, E1-E5). Options are checked before anything is read;
// the file is written to a temporary name and renamed, so a failed export
// leaves no file behind.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/log.h"
#include "core/status.h"
#include "export/export_options.h"
#include "format/gguf.h"

namespace llmpack {

struct ExportReport {
  std::string output;
  std::string source_kind;               // "llama2.c", "PyTorch", ...
  std::string tokenizer;                 // what the tokenizer came from
  uint64_t file_bytes = 0;
  size_t n_tensors = 0;
  std::map<std::string, int> dtype_counts;  // "f32" -> 11
  PackageShape shape;
  std::vector<std::string> notices;      // fallbacks, skipped tensors (also logged)

  // "wrote out.gguf: 1.1 MB, 48 tensors (f32 11, q8_0 37), S 128, C 128, B 128, dynamic, off_graph KV cache"
  std::string summary() const;
};

// Progress: (tensors written, total, bytes written), as GgufWriter reports it.
Result<ExportReport> export_package(const ExportOptions& options, const GgufWriter::Progress& progress = nullptr,
                                    const LogSink& log = null_log_sink());

}  // namespace llmpack
