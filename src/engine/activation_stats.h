// Activation statistics for importance matrices (`llmpack imatrix`): for each
// weight matrix a forward pass multiplies, the sum over the rows (tokens) it
// saw of each input column's squared activation, and how many rows that was.
// A Transformer with stats bound adds every matmul's input to them; the
// names are the GGUF tensor names the exporter writes ("blk.0.attn_q.weight").
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "format/imatrix_file.h"

namespace llmpack {

// One matrix's input sums, in double so that a long calibration text's
// millions of small squares do not lose their tail.
struct ActivationSums {
  std::vector<double> sum_sq;  // [n_cols]: sum over rows of x_j^2
  int64_t count = 0;           // rows added

  // Adds rows x[n, n_cols] (n_cols = sum_sq.size()), one row after another:
  // the same rows give the same sums whatever thread computed them.
  void add_rows(const float* x, int64_t n);
};

// add_rows of the same rows x[n, n_cols] into every one of `sums` (matrices
// that read one input: q, k and v; gate and up), each square computed once;
// every sum gets the same additions in the same order as add_rows gives it.
void add_shared_rows(std::initializer_list<ActivationSums*> sums, const float* x, int64_t n);

class ActivationStats {
 public:
  // `include_output`: also the output matrix's input (the final-normed rows
  // whose logits are computed), under "output.weight", or "token_embd.weight"
  // for a model whose output is tied to its embedding; llama-imatrix leaves
  // it out unless --process_output.
  explicit ActivationStats(bool include_output = false) : include_output_(include_output) {}

  bool include_output() const { return include_output_; }

  // The sums of weight `name`, created at zero on first use. An existing
  // entry of another width is an error naming both (stats bound to two
  // different models).
  Result<ActivationSums*> entry(const std::string& name, int64_t n_cols);
  const ActivationSums* find(std::string_view name) const;
  const std::map<std::string, ActivationSums, std::less<>>& weights() const { return weights_; }

  // Forgets every sum (the entries stay, at zero).
  void clear();

  // The sums in the file's form (float sums, the row count), with the
  // calibration's description.
  ImportanceMatrix to_imatrix(std::vector<std::string> datasets, int64_t chunk_count, int64_t chunk_size) const;

 private:
  bool include_output_;
  std::map<std::string, ActivationSums, std::less<>> weights_;
};

}  // namespace llmpack
