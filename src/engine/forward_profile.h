// Where a forward pass spends its wall time, stage by stage, for
// `llmpack bench --profile`. A Transformer without a profile bound reads no
// clock at all.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace llmpack {

enum class ForwardStage : int {
  kQkv,         // q, k, v projections (one grouped matmul)
  kAttention,   // scores, softmax and value sums over the cache
  kAttnOutput,  // the output projection wo
  kFfnGateUp,   // gate and up projections (one grouped matmul)
  kFfnDown,     // down projection
  kLogits,      // the output matrix
  kOther,       // embedding, norms, rope and cache writes, swiglu, residual adds
  kCount
};

inline const char* forward_stage_name(ForwardStage s) {
  static constexpr const char* kNames[] = {"q/k/v", "attention", "attn out", "ffn gate+up",
                                           "ffn down", "logits", "other"};
  return kNames[static_cast<int>(s)];
}

struct ForwardProfile {
  static constexpr size_t kStages = static_cast<size_t>(ForwardStage::kCount);
  std::array<int64_t, kStages> ns{};  // wall time per stage
  int64_t forward_calls = 0;          // Transformer::forward calls timed

  void reset() {
    ns.fill(0);
    forward_calls = 0;
  }
  int64_t total_ns() const {
    int64_t sum = 0;
    for (int64_t v : ns) sum += v;
    return sum;
  }
};

// Adds the wall time of its scope to one stage of `profile` (if any).
class StageTimer {
 public:
  StageTimer(ForwardProfile* profile, ForwardStage stage) : profile_(profile), stage_(stage) {
    if (profile_) start_ = std::chrono::steady_clock::now();
  }
  ~StageTimer() {
    if (!profile_) return;
    const auto elapsed = std::chrono::steady_clock::now() - start_;
    profile_->ns[static_cast<size_t>(stage_)] +=
        std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count();
  }
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;

 private:
  ForwardProfile* profile_;
  ForwardStage stage_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace llmpack
