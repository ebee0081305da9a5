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

// One tensor as the export plans it.
struct PlannedTensor {
  std::string name;
  std::string from, to;          // the source's type and the package's ("f16" -> "q4_0")
  std::vector<int64_t> shape;    // GGUF order: row length first
  uint64_t bytes = 0;            // in the package
};

struct ExportReport {
  std::string output;
  std::string source_kind;               // "llama2.c", "PyTorch", ...
  std::string tokenizer;                 // what the tokenizer came from
  uint64_t file_bytes = 0;
  size_t n_tensors = 0;
  std::map<std::string, int> dtype_counts;  // "f32" -> 11
  PackageShape shape;
  std::vector<std::string> notices;      // fallbacks, skipped tensors (also logged)
  std::vector<PlannedTensor> tensors;    // every tensor, in file order
  uint64_t tensor_bytes = 0;             // their sum
  bool dry_run = false;                  // nothing was written

  // "wrote out.gguf: 1.1 MB, 48 tensors (f32 11, q8_0 37), S 128, C 128, B 128, dynamic, off_graph KV cache"
  std::string summary() const;
};

// Progress: (tensors written, total, bytes written), as GgufWriter reports it.
// With options.dry_run, everything up to the writing (the source, the
// tokenizer, every tensor's type and size, the notices), and no file.
Result<ExportReport> export_package(const ExportOptions& options, const GgufWriter::Progress& progress = nullptr,
                                    const LogSink& log = null_log_sink());

}  // namespace llmpack
