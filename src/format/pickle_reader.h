// A restricted pickle reader for PyTorch state dicts (protocol 2..4).
//
// It interprets only the opcodes a state dict needs and never executes
// anything: GLOBAL is limited to an allowlist (collections.OrderedDict,
// torch._utils._rebuild_tensor_v2 / _rebuild_parameter, torch.*Storage),
// REDUCE only calls those, and BINPERSID turns torch's persistent ids
// ('storage', torch.FloatStorage, key, location, numel) into storage
// references. Any other opcode or global is refused with its name and byte
// offset ("pickle opcode 'c' GLOBAL 'os system' at byte 18 is not allowed").
// Values live in an arena addressed by index, so hostile memo tricks (a
// list that contains itself) cannot create ownership cycles.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace llmpack {

enum class PickleKind { kNone, kBool, kInt, kFloat, kString, kTuple, kList, kDict, kGlobal, kStorage, kTensor };

// A storage's element type, from torch.<X>Storage.
enum class TorchDType { kF32, kF16, kBF16 };
int64_t torch_dtype_size(TorchDType t);

struct PickleValue {
  PickleKind kind = PickleKind::kNone;
  int64_t i = 0;                 // kInt, kBool
  double f = 0;                  // kFloat
  std::string s;                 // kString; kGlobal "module.name"; kStorage key
  std::vector<uint32_t> items;   // kTuple, kList: element indices; kDict: key, value, key, value...
  // kStorage
  TorchDType dtype = TorchDType::kF32;
  int64_t numel = 0;
  // kTensor (from _rebuild_tensor_v2): s = storage key, dtype, numel = storage numel
  int64_t storage_offset = 0;
  std::vector<int64_t> shape;
  std::vector<int64_t> stride;
};

struct PickleLimits {
  size_t max_values = size_t{1} << 22;  // arena size
  size_t max_stack = size_t{1} << 20;
};

class PickleDocument {
 public:
  // Runs the restricted VM over `bytes` (a whole data.pkl).
  static Result<PickleDocument> parse(std::span<const uint8_t> bytes, const PickleLimits& limits = {});

  const PickleValue& value(uint32_t index) const { return values_[index]; }
  const PickleValue& root() const { return values_[root_]; }
  uint32_t root_index() const { return root_; }
  size_t size() const { return values_.size(); }
  // The value stored under string key `key` in dict `dict`, or nullptr.
  const PickleValue* dict_get(const PickleValue& dict, std::string_view key) const;

 private:
  friend class PickleMachine;
  std::vector<PickleValue> values_;
  uint32_t root_ = 0;
};

}  // namespace llmpack
