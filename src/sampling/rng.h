// A small seeded PRNG (PCG32: 64-bit LCG state, xorshift + random-rotation
// output). Deterministic across platforms and compilers, unlike std::
// distributions, so a fixed seed gives the same text everywhere (G5).
#pragma once

#include <cstdint>

namespace llmpack {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) { reseed(seed); }

  void reseed(uint64_t seed) {
    state_ = 0;
    next_u32();
    state_ += seed;
    next_u32();
  }

  uint32_t next_u32() {
    const uint64_t old = state_;
    state_ = old * kMultiplier + kIncrement;
    const auto xorshifted = static_cast<uint32_t>(((old >> 18u) ^ old) >> 27u);
    const auto rot = static_cast<uint32_t>(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((32u - rot) & 31u));
  }

  // Uniform in [0, 1) with 53 random bits.
  double next_double() {
    const uint64_t hi = next_u32();
    const uint64_t lo = next_u32();
    const uint64_t bits = ((hi << 32) | lo) >> 11;
    return static_cast<double>(bits) * (1.0 / 9007199254740992.0);  // 2^-53
  }

 private:
  static constexpr uint64_t kMultiplier = 6364136223846793005ULL;
  static constexpr uint64_t kIncrement = 1442695040888963407ULL;
  uint64_t state_ = 0;
};

}  // namespace llmpack
