// A plain fp64 forward pass of a Llama-family model, written for clarity and
// used as an oracle: no batching, no cache tricks, no threads. It reads the
// weights through the model's bindings (dequantized row by row) and recomputes
// every position from scratch.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model.h"

namespace llmpack::reference {

// logits[p] is the next-token distribution after tokens[0..p], for every p.
std::vector<std::vector<double>> forward_all(const Model& model, const std::vector<int64_t>& tokens);

// Max |a - b| over all entries, divided by max |b|.
double relative_max_diff(const std::vector<float>& a, const std::vector<double>& b);

}  // namespace llmpack::reference
