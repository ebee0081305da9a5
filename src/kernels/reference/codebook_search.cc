// Scalar reference of codebook_least_error (kernels.h): each candidate's
// error summed element by element, the first of least error kept.
#include <cmath>

#include "kernels/reference/reference.h"

namespace llmpack::kernels::ref {

int codebook_least_error(const CodebookCandidates& c, const float* t, const float* w, float s, float* err) {
  int best = 0;
  float best_err = INFINITY;
  for (int i = 0; i < c.n; ++i) {
    const uint8_t* codes = c.lane_codes + (i / 8) * c.stride + i % 8;
    float e = 0;
    for (int j = 0; j < c.dim; ++j) {
      const float r = t[j] - s * c.levels[codes[8 * j]];
      e += w[j] * r * r;
    }
    if (e < best_err) best_err = e, best = i;  // NaN never wins
  }
  *err = best_err;
  return best;
}

}  // namespace llmpack::kernels::ref
