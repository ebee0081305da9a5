// Importance matrices (llama.cpp's imatrix files): for each weight matrix, the
// sum over a calibration text of each input column's squared activation, and
// how many activation rows were summed. The mean square per column says how
// much an error in that column's weights moves the matrix's output, so a
// quantizer can weight its squared error by it (export --imatrix).
//
// Two file forms are read and written:
//  - GGUF (llama-imatrix's default): general.type "imatrix", imatrix.datasets
//    (string array), imatrix.chunk_count and imatrix.chunk_size (u32), and per
//    weight NAME two F32 tensors: NAME.in_sum2 [n_cols] and NAME.counts [1]
//    (an optional NAME.in_sum, the plain sums, is read past);
//  - the legacy binary form (.dat): i32 entry count; per entry i32 name
//    length, the name, i32 ncall, i32 nval, nval f32 (mean squares times
//    ncall); then i32 chunk count and i32 length + dataset name.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace llmpack {

struct ImatrixEntry {
  std::vector<float> sum_sq;  // [n_cols]: sum of x_j^2 over the rows seen
  double count = 0;           // rows (tokens) summed
  // sum_sq / count, column by column ([n_cols]; all ones where count is 0).
  std::vector<float> mean_sq() const;
};

struct ImportanceMatrix {
  // Keyed by the weight's GGUF name ("blk.0.attn_q.weight").
  std::map<std::string, ImatrixEntry, std::less<>> entries;
  std::vector<std::string> datasets;  // calibration files it was computed on
  int64_t chunk_count = 0;            // chunks (windows) processed
  int64_t chunk_size = 0;             // tokens per chunk
  const ImatrixEntry* find(std::string_view weight_name) const;
};

// Reads either form (GGUF by its magic, else the legacy form). Every count
// and length is checked against the file; entries with more than one matrix
// (mixture-of-experts) are refused by name.
Result<ImportanceMatrix> read_imatrix(const std::string& path);
// The same from bytes in memory (tests and fuzzing).
Result<ImportanceMatrix> read_imatrix_bytes(std::span<const uint8_t> bytes);

// Adds `from` to `into` (llama-imatrix's --in-file): each entry's sums and
// count added to the entry of its name (a new name copied), the datasets
// appended, the chunk counts added; an entry of another length is an error
// naming it and both lengths (files of two models).
Status merge_imatrix(ImportanceMatrix* into, const ImportanceMatrix& from);

// Writes the GGUF form (or the legacy form when `legacy`), entries in name
// order, so llama-quantize --imatrix reads it too.
Status write_imatrix(const std::string& path, const ImportanceMatrix& imatrix, bool legacy = false);

}  // namespace llmpack
