// Logits of a whole model for the golden tests: every position of a prompt
// on the active kernel path, and the distance between two sets of them.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "engine/llama_program.h"

namespace llmpack::testing {

// All positions' logits of `model_path` on the active kernel path: the prompt
// in one call (prefill kernels), or a token a call (decode kernels).
inline std::vector<std::vector<float>> all_logits(const std::string& model_path, const std::vector<int64_t>& tokens,
                                                  bool one_by_one = false) {
  ProgramOptions options;
  options.cpu_threads = 2;
  options.logits_rows = 16;
  auto pkg = load_package(model_path, "", options);
  EXPECT_TRUE(pkg.ok()) << pkg.status().message();
  if (!pkg.ok()) return {};
  std::vector<std::vector<float>> rows;
  if (one_by_one) {
    for (size_t p = 0; p < tokens.size(); ++p) {
      auto step = pkg->program->forward(std::span<const int64_t>(&tokens[p], 1), static_cast<int64_t>(p));
      EXPECT_TRUE(step.ok()) << step.status().message();
      if (!step.ok()) return {};
      rows.emplace_back(step->last().begin(), step->last().end());
    }
    return rows;
  }
  auto logits = pkg->program->forward(tokens, 0, /*all_logits=*/true);
  EXPECT_TRUE(logits.ok()) << logits.status().message();
  if (!logits.ok()) return {};
  for (size_t p = 0; p < tokens.size(); ++p) rows.emplace_back(logits->row(p).begin(), logits->row(p).end());
  return rows;
}

// The worst max |a - b| / max |b| over positions (1e9 when a has fewer
// positions or logits than b: a forward pass that failed).
template <class Row>
inline double worst_relative(const std::vector<std::vector<float>>& a, const std::vector<Row>& b) {
  if (a.size() < b.size()) return 1e9;
  for (size_t p = 0; p < b.size(); ++p)
    if (a[p].size() < b[p].size()) return 1e9;
  double worst = 0;
  for (size_t p = 0; p < b.size(); ++p) {
    double diff = 0, scale = 0;
    for (size_t i = 0; i < b[p].size(); ++i) {
      diff = std::max(diff, std::abs(double(a[p][i]) - double(b[p][i])));
      scale = std::max(scale, std::abs(double(b[p][i])));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

}  // namespace llmpack::testing
