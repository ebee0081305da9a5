#include "engine/activation_stats.h"

#include <algorithm>

namespace llmpack {

void ActivationSums::add_rows(const float* x, int64_t n) {
  const size_t cols = sum_sq.size();
  double* s = sum_sq.data();
  for (int64_t t = 0; t < n; ++t) {
    const float* row = x + static_cast<size_t>(t) * cols;
    for (size_t j = 0; j < cols; ++j) {
      const double v = row[j];
      s[j] += v * v;
    }
  }
  count += n;
}

void add_shared_rows(std::initializer_list<ActivationSums*> sums, const float* x, int64_t n) {
  if (sums.size() == 1) return (*sums.begin())->add_rows(x, n);
  const size_t cols = (*sums.begin())->sum_sq.size();
  for (int64_t t = 0; t < n; ++t) {
    const float* row = x + static_cast<size_t>(t) * cols;
    for (size_t j = 0; j < cols; ++j) {
      const double v = row[j], sq = v * v;
      for (ActivationSums* s : sums) s->sum_sq[j] += sq;
    }
  }
  for (ActivationSums* s : sums) s->count += n;
}

Result<ActivationSums*> ActivationStats::entry(const std::string& name, int64_t n_cols) {
  auto [it, added] = weights_.try_emplace(name);
  ActivationSums& sums = it->second;
  if (added) sums.sum_sq.assign(static_cast<size_t>(n_cols), 0.0);
  if (static_cast<int64_t>(sums.sum_sq.size()) != n_cols)
    return error_status("activation statistics: weight '" + name + "' has " + std::to_string(n_cols) +
                        " input columns, but its sums so far have " + std::to_string(sums.sum_sq.size()));
  return &sums;
}

const ActivationSums* ActivationStats::find(std::string_view name) const {
  const auto it = weights_.find(name);
  return it == weights_.end() ? nullptr : &it->second;
}

void ActivationStats::clear() {
  for (auto& [name, sums] : weights_) {
    std::fill(sums.sum_sq.begin(), sums.sum_sq.end(), 0.0);
    sums.count = 0;
  }
}

ImportanceMatrix ActivationStats::to_imatrix(std::vector<std::string> datasets, int64_t chunk_count,
                                             int64_t chunk_size) const {
  ImportanceMatrix m;
  m.datasets = std::move(datasets);
  m.chunk_count = chunk_count;
  m.chunk_size = chunk_size;
  for (const auto& [name, sums] : weights_) {
    ImatrixEntry& e = m.entries[name];
    e.sum_sq.assign(sums.sum_sq.begin(), sums.sum_sq.end());  // rounded to float, as the files hold them
    e.count = static_cast<double>(sums.count);
  }
  return m;
}

}  // namespace llmpack
