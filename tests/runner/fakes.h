// Fakes for runner tests: a Program that records every forward call and
// returns logits that depend on the whole token sequence up to the last
// valid position, and a byte-per-character Tokenizer.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/program.h"
#include "tokenizer/tokenizer.h"

namespace llmpack::testing {

// Token ids of the fake vocabulary.
inline constexpr int32_t kUnk = 0, kBos = 1, kEos = 2, kEot = 3;
inline constexpr int32_t kFirstChar = 4;  // ids 4..98 are ASCII 0x20..0x7E
inline constexpr int32_t kLastChar = kFirstChar + 0x7E - 0x20;
inline constexpr int32_t kByteC3 = 99, kByteA9 = 100;  // "é" split in two tokens
inline constexpr int32_t kHello = 101, kWorld = 102, kSt = 103, kOp = 104, kStar = 105;
inline constexpr int32_t kProgramEos = 106;  // an EOS only get_eos_ids names
inline constexpr int32_t kVocab = 128;

inline int32_t char_id(char c) { return kFirstChar + (static_cast<unsigned char>(c) - 0x20); }

class FakeTokenizer : public Tokenizer {
 public:
  Result<std::vector<int32_t>> encode(std::string_view text, int n_bos, int n_eos) const override {
    std::vector<int32_t> ids(n_bos, kBos);
    for (size_t i = 0; i < text.size(); ++i) {
      const auto b = static_cast<unsigned char>(text[i]);
      if (b == '\r') continue;  // dropped, as a normalizer might: "\r" has no tokens
      if (b < 0x20 || b > 0x7E) return error_status("fake tokenizer: byte at offset " + std::to_string(i));
      ids.push_back(char_id(text[i]));
    }
    for (int i = 0; i < n_eos; ++i) ids.push_back(kEos);
    return ids;
  }
  Result<std::string> decode(int32_t, int32_t id) const override {
    if (id < 0 || id >= kVocab) return error_status("fake tokenizer: unknown id " + std::to_string(id));
    return piece(id);
  }
  int32_t vocab_size() const override { return kVocab; }
  int32_t bos_id() const override { return kBos; }
  int32_t eos_id() const override { return kEos; }
  std::vector<int32_t> end_of_turn_ids() const override { return {kEot}; }
  std::string piece(int32_t id) const override {
    switch (id) {
      case kUnk: return "";
      case kBos: return "";
      case kEos: return "</s>";  // visible if a runner ever emitted EOS text
      case kEot: return "<eot>";
      case kByteC3: return "\xC3";
      case kByteA9: return "\xA9";
      case kHello: return "Hello";
      case kWorld: return " world";
      case kSt: return "St";
      case kOp: return "op";
      case kStar: return "*";
      case kProgramEos: return "<end>";
      default: break;
    }
    if (id >= kFirstChar && id <= kLastChar) return std::string(1, static_cast<char>(0x20 + id - kFirstChar));
    return "";
  }
};

// The package kinds of CONTRACT R1-R5.
struct FakeKind {
  std::string name;
  int64_t S = 128, C = 128, B = 128;
  bool dynamic = true;
  bool kv = true;
  std::vector<int64_t> eos_ids = {kProgramEos};
};

struct ForwardCall {
  std::vector<int64_t> tokens;  // as passed, padding included
  int64_t start_pos = 0;
  int64_t n_valid = -1;
};

class FakeProgram : public Program {
 public:
  explicit FakeProgram(FakeKind kind) : kind_(std::move(kind)), logits_(kVocab) {}

  std::vector<std::string> method_names() const override {
    return {"forward", "get_max_seq_len", "get_max_context_len", "enable_dynamic_shape", "use_kv_cache",
            "get_vocab_size", "get_bos_id", "get_eos_ids", "get_n_layers"};
  }
  Result<MethodMeta> method_meta(std::string_view method) const override {
    if (method != "forward") return error_status("no meta for " + std::string(method));
    MethodMeta meta;
    meta.name = "forward";
    meta.inputs.push_back({ScalarType::kInt64, {1, kind_.B}, kind_.dynamic});
    meta.inputs.push_back({ScalarType::kInt64, {1}, false});
    meta.outputs.push_back({ScalarType::kFloat32, {1, kVocab}, false});
    return meta;
  }
  Result<ConstantValue> execute_constant(std::string_view m) const override {
    if (m == "get_max_seq_len") return ConstantValue(kind_.S);
    if (m == "get_max_context_len") return ConstantValue(kind_.C);
    if (m == "enable_dynamic_shape") return ConstantValue(kind_.dynamic);
    if (m == "use_kv_cache") return ConstantValue(kind_.kv);
    if (m == "get_vocab_size") return ConstantValue(int64_t{kVocab});
    if (m == "get_bos_id") return ConstantValue(int64_t{kBos});
    if (m == "get_eos_ids") return ConstantValue(kind_.eos_ids);
    if (m == "get_n_layers") return ConstantValue(int64_t{2});
    return error_status("no constant method " + std::string(m));
  }

  // Enforces the contract the way the engine does (P5), then computes logits
  // from the tokens at positions 0..last valid one.
  Result<LogitsView> forward(std::span<const int64_t> tokens, int64_t start_pos, bool all_logits,
                             int64_t n_valid) override {
    calls.push_back({std::vector<int64_t>(tokens.begin(), tokens.end()), start_pos, n_valid});
    if (on_forward) on_forward(calls.size());
    if (sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
    const auto n = static_cast<int64_t>(tokens.size());
    if (kind_.dynamic ? (n < 1 || n > kind_.B) : n != kind_.B) {
      return error_status("forward: token input of " + std::to_string(n) + " vs bound " + std::to_string(kind_.B));
    }
    const int64_t valid = n_valid < 0 ? n : n_valid;
    if (valid < 1 || valid > n) return error_status("forward: bad n_valid " + std::to_string(n_valid));
    if (!kind_.kv) {
      if (start_pos != 0) return error_status("forward: no KV cache needs start_pos 0");
      cache_.assign(tokens.begin(), tokens.begin() + valid);
    } else {
      if (start_pos > static_cast<int64_t>(cache_.size())) return error_status("forward: hole in the cache");
      if (start_pos + valid > kind_.C) return error_status("forward: past the context");
      cache_.resize(start_pos);
      cache_.insert(cache_.end(), tokens.begin(), tokens.begin() + valid);
    }
    compute_logits();
    return LogitsView{logits_.data(), 1, kVocab};
  }

  void reset_cache() override {
    cache_.clear();
    ++resets;
  }

  // logits[v] for the sequence in the cache: a hash of every token and its
  // position, so wrong chunking, positions or padding change the result.
  void compute_logits() {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < cache_.size(); ++i) {
      h = (h ^ static_cast<uint64_t>(cache_[i] * 131 + static_cast<int64_t>(i))) * 1099511628211ULL;
    }
    for (int32_t v = 0; v < kVocab; ++v) {
      uint64_t x = h ^ (static_cast<uint64_t>(v) * 0x9E3779B97F4A7C15ULL);
      x = (x ^ (x >> 31)) * 0xBF58476D1CE4E5B9ULL;
      x ^= x >> 29;
      const bool plain = v >= kFirstChar && v <= kLastChar;
      logits_[v] = plain ? static_cast<float>(x % 10000) / 1000.0f : -50.0f;
    }
    const int64_t last_pos = static_cast<int64_t>(cache_.size()) - 1;
    if (auto it = forced.find(last_pos); it != forced.end()) logits_[it->second] = 100.0f;
    if (force_all >= 0) logits_[force_all] = 100.0f;
  }

  const std::vector<float>& last_logits() const { return logits_; }
  const std::vector<int64_t>& cache() const { return cache_; }

  std::vector<ForwardCall> calls;
  std::map<int64_t, int32_t> forced;  // last position -> the token made argmax
  int32_t force_all = -1;             // made argmax everywhere when >= 0
  std::function<void(size_t)> on_forward;  // called with the call count
  int sleep_ms = 0;
  int resets = 0;

 private:
  FakeKind kind_;
  std::vector<int64_t> cache_;
  std::vector<float> logits_;
};

}  // namespace llmpack::testing
