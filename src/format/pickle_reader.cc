#include "format/pickle_reader.h"

#include <cstring>
#include <unordered_map>

namespace llmpack {

int64_t torch_dtype_size(TorchDType t) { return t == TorchDType::kF32 ? 4 : 2; }

namespace {

const char* opcode_name(uint8_t op) {
  switch (op) {
    case 0x80: return "PROTO"; case 0x95: return "FRAME"; case '}': return "EMPTY_DICT";
    case ']': return "EMPTY_LIST"; case ')': return "EMPTY_TUPLE"; case '(': return "MARK";
    case 'X': return "BINUNICODE"; case 0x8c: return "SHORT_BINUNICODE"; case 0x8d: return "BINUNICODE8";
    case 'J': return "BININT"; case 'K': return "BININT1"; case 'M': return "BININT2"; case 0x8a: return "LONG1";
    case 'G': return "BINFLOAT"; case 'N': return "NONE"; case 0x88: return "NEWTRUE"; case 0x89: return "NEWFALSE";
    case 't': return "TUPLE"; case 0x85: return "TUPLE1"; case 0x86: return "TUPLE2"; case 0x87: return "TUPLE3";
    case 'c': return "GLOBAL"; case 0x93: return "STACK_GLOBAL"; case 'R': return "REDUCE";
    case 'Q': return "BINPERSID"; case 'q': return "BINPUT"; case 'r': return "LONG_BINPUT";
    case 0x94: return "MEMOIZE"; case 'h': return "BINGET"; case 'j': return "LONG_BINGET";
    case 's': return "SETITEM"; case 'u': return "SETITEMS"; case 'a': return "APPEND"; case 'e': return "APPENDS";
    case 'b': return "BUILD"; case '.': return "STOP";
    // Known but refused: they build arbitrary objects or are not used by torch.save.
    case 'i': return "INST"; case 'o': return "OBJ"; case 0x81: return "NEWOBJ"; case 0x92: return "NEWOBJ_EX";
    case 'P': return "PERSID"; case 'S': return "STRING"; case 'T': return "BINSTRING";
    case 'U': return "SHORT_BINSTRING"; case 'V': return "UNICODE"; case 'I': return "INT"; case 'L': return "LONG";
    case 'F': return "FLOAT"; case 0x8b: return "LONG4"; case 'B': return "BINBYTES"; case 'C': return "SHORT_BINBYTES";
    case 0x82: return "EXT1"; case 0x83: return "EXT2"; case 0x84: return "EXT4"; case 'p': return "PUT";
    case 'g': return "GET"; case '0': return "POP"; case '1': return "POP_MARK"; case '2': return "DUP";
    case 'l': return "LIST"; case 'd': return "DICT"; case 0x8f: return "EMPTY_SET"; case 0x90: return "ADDITEMS";
    case 0x91: return "FROZENSET"; case 0x96: return "BYTEARRAY8"; case 0x97: return "NEXT_BUFFER";
    case 0x98: return "READONLY_BUFFER";
    default: return nullptr;
  }
}

std::string describe(uint8_t op) {
  std::string s;
  if (op >= 0x21 && op < 0x7f) s = std::string("'") + static_cast<char>(op) + "'";
  else {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "0x%02x", op);
    s = buf;
  }
  if (const char* name = opcode_name(op)) s += std::string(" ") + name;
  return "pickle opcode " + s;
}

}  // namespace

// The virtual machine: a stack of arena indices, a mark stack, a memo.
class PickleMachine {
 public:
  PickleMachine(std::span<const uint8_t> bytes, const PickleLimits& limits) : b_(bytes), limits_(limits) {}
  Result<PickleDocument> run();

 private:
  Status step(uint8_t op);
  Status push_literal(uint8_t op);  // strings, integers and floats
  Status fail(const std::string& what) const {
    return error_status(describe(op_) + " at byte " + std::to_string(op_pos_) + ": " + what);
  }
  template <typename T>
  Status read(T* out) {
    if (b_.size() - pos_ < sizeof(T)) return fail("truncated argument (the pickle ends at byte " + std::to_string(b_.size()) + ")");
    std::memcpy(out, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return ok_status();
  }
  Status read_bytes(uint64_t n, std::string* out) {
    if (b_.size() - pos_ < n)
      return fail("length " + std::to_string(n) + " runs past the end of the pickle (" +
                  std::to_string(b_.size() - pos_) + " bytes left)");
    out->assign(reinterpret_cast<const char*>(b_.data() + pos_), static_cast<size_t>(n));
    pos_ += n;
    return ok_status();
  }
  Status read_line(std::string* out) {
    const uint64_t start = pos_;
    while (pos_ < b_.size() && b_[pos_] != '\n') ++pos_;
    if (pos_ >= b_.size()) return fail("unterminated line");
    out->assign(reinterpret_cast<const char*>(b_.data() + start), static_cast<size_t>(pos_ - start));
    ++pos_;
    return ok_status();
  }
  Status push_new(PickleValue v) {
    if (doc_.values_.size() >= limits_.max_values) return fail("more than " + std::to_string(limits_.max_values) + " values");
    doc_.values_.push_back(std::move(v));
    return push(static_cast<uint32_t>(doc_.values_.size() - 1));
  }
  Status push(uint32_t index) {
    if (stack_.size() >= limits_.max_stack) return fail("stack deeper than " + std::to_string(limits_.max_stack));
    stack_.push_back(index);
    return ok_status();
  }
  Status pop(uint32_t* out) {
    if (stack_.size() <= floor()) return fail("stack underflow");
    *out = stack_.back();
    stack_.pop_back();
    return ok_status();
  }
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  Status pop_mark(std::vector<uint32_t>* items) {
    if (marks_.empty()) return fail("no MARK on the stack");
    const size_t m = marks_.back();
    marks_.pop_back();
    items->assign(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return ok_status();
  }
  Status tuple_of(size_t n) {
    if (stack_.size() < floor() + n) return fail("stack underflow");
    PickleValue t;
    t.kind = PickleKind::kTuple;
    t.items.assign(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
    stack_.resize(stack_.size() - n);
    return push_new(std::move(t));
  }
  Status memo_put(uint64_t key) {
    if (stack_.empty()) return fail("memo store with an empty stack");
    if (memo_.size() >= limits_.max_values && !memo_.count(key)) return fail("memo too large");
    memo_[key] = stack_.back();
    return ok_status();
  }
  Status memo_get(uint64_t key) {
    auto it = memo_.find(key);
    if (it == memo_.end()) return fail("memo key " + std::to_string(key) + " was never stored");
    return push(it->second);
  }
  PickleValue& at(uint32_t i) { return doc_.values_[i]; }
  Status global(const std::string& module, const std::string& name);
  Status reduce();
  Status rebuild_tensor(const std::vector<uint32_t>& args);
  Status persistent_id();
  Status int_tuple(uint32_t index, const char* what, std::vector<int64_t>* out);
  Status set_items(const std::vector<uint32_t>& kv, uint32_t target);
  Status append_items(const std::vector<uint32_t>& items, uint32_t target);

  std::span<const uint8_t> b_;
  PickleLimits limits_;
  uint64_t pos_ = 0;
  uint64_t op_pos_ = 0;
  uint8_t op_ = 0;
  bool stopped_ = false;
  std::vector<uint32_t> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, uint32_t> memo_;
  PickleDocument doc_;
};

Result<PickleDocument> PickleMachine::run() {
  while (!stopped_) {
    if (pos_ >= b_.size())
      return error_status("pickle truncated: no STOP opcode before the end (" + std::to_string(b_.size()) + " bytes)");
    op_pos_ = pos_;
    op_ = b_[pos_++];
    LLMPACK_RETURN_IF_ERROR(step(op_));
  }
  return std::move(doc_);
}

Status PickleMachine::global(const std::string& module, const std::string& name) {
  static const char* const kAllowed[][2] = {
      {"collections", "OrderedDict"},   {"torch._utils", "_rebuild_tensor_v2"},
      {"torch._utils", "_rebuild_parameter"}, {"torch", "FloatStorage"},
      {"torch", "HalfStorage"},         {"torch", "BFloat16Storage"},
  };
  for (const auto& a : kAllowed) {
    if (module == a[0] && name == a[1]) {
      PickleValue g;
      g.kind = PickleKind::kGlobal;
      g.s = module + "." + name;
      return push_new(std::move(g));
    }
  }
  return fail("global '" + module + " " + name + "' is not allowed (only tensors and dicts are read)");
}

Status PickleMachine::int_tuple(uint32_t index, const char* what, std::vector<int64_t>* out) {
  const PickleValue& t = at(index);
  if (t.kind != PickleKind::kTuple) return fail(std::string(what) + ": expected a tuple of integers");
  if (t.items.size() > 8) return fail(std::string(what) + ": " + std::to_string(t.items.size()) + " dimensions");
  out->clear();
  for (uint32_t i : t.items) {
    const PickleValue& v = at(i);
    if (v.kind != PickleKind::kInt || v.i < 0 || v.i > (int64_t{1} << 40))
      return fail(std::string(what) + ": expected non-negative integers");
    out->push_back(v.i);
  }
  return ok_status();
}

// _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, hooks[, metadata])
Status PickleMachine::rebuild_tensor(const std::vector<uint32_t>& args) {
  if (args.size() < 4) return fail("_rebuild_tensor_v2 expects at least 4 arguments, found " + std::to_string(args.size()));
  const PickleValue& storage = at(args[0]);
  const PickleValue& offset = at(args[1]);
  if (storage.kind != PickleKind::kStorage) return fail("_rebuild_tensor_v2: first argument is not a storage");
  if (offset.kind != PickleKind::kInt || offset.i < 0) return fail("_rebuild_tensor_v2: bad storage offset");
  PickleValue t;
  t.kind = PickleKind::kTensor;
  t.s = storage.s;
  t.dtype = storage.dtype;
  t.numel = storage.numel;
  t.storage_offset = offset.i;
  LLMPACK_RETURN_IF_ERROR(int_tuple(args[2], "tensor size", &t.shape));
  LLMPACK_RETURN_IF_ERROR(int_tuple(args[3], "tensor stride", &t.stride));
  if (t.shape.size() != t.stride.size()) return fail("tensor size and stride have different lengths");
  return push_new(std::move(t));
}

Status PickleMachine::reduce() {
  uint32_t args_i = 0, fn_i = 0;
  LLMPACK_RETURN_IF_ERROR(pop(&args_i));
  LLMPACK_RETURN_IF_ERROR(pop(&fn_i));
  const PickleValue& fn = at(fn_i);
  if (fn.kind != PickleKind::kGlobal) return fail("REDUCE on a value that is not an allowed global");
  if (at(args_i).kind != PickleKind::kTuple) return fail("REDUCE arguments are not a tuple");
  const std::vector<uint32_t> args = at(args_i).items;  // copy: push_new may reallocate
  if (fn.s == "collections.OrderedDict") {
    if (!args.empty()) return fail("OrderedDict called with arguments");
    PickleValue d;
    d.kind = PickleKind::kDict;
    return push_new(std::move(d));
  }
  if (fn.s == "torch._utils._rebuild_tensor_v2") return rebuild_tensor(args);
  if (fn.s == "torch._utils._rebuild_parameter") {
    if (args.empty() || at(args[0]).kind != PickleKind::kTensor) return fail("_rebuild_parameter expects a tensor");
    return push(args[0]);
  }
  return fail("'" + fn.s + "' cannot be called");
}

// torch's persistent id: ('storage', torch.<X>Storage, key, location, numel).
Status PickleMachine::persistent_id() {
  uint32_t pid_i = 0;
  LLMPACK_RETURN_IF_ERROR(pop(&pid_i));
  const PickleValue& pid = at(pid_i);
  if (pid.kind != PickleKind::kTuple || pid.items.size() != 5)
    return fail("expected a persistent id ('storage', type, key, location, numel)");
  const PickleValue& tag = at(pid.items[0]);
  const PickleValue& type = at(pid.items[1]);
  const PickleValue& key = at(pid.items[2]);
  const PickleValue& numel = at(pid.items[4]);
  if (tag.kind != PickleKind::kString || tag.s != "storage") return fail("persistent id is not a 'storage'");
  if (type.kind != PickleKind::kGlobal) return fail("persistent id: storage type is not a global");
  if (key.kind != PickleKind::kString || key.s.empty() || key.s.size() > 64)
    return fail("persistent id: storage key is not a short string");
  if (numel.kind != PickleKind::kInt || numel.i < 0 || numel.i > (int64_t{1} << 40))
    return fail("persistent id: bad element count");
  PickleValue s;
  s.kind = PickleKind::kStorage;
  s.s = key.s;
  s.numel = numel.i;
  if (type.s == "torch.FloatStorage") s.dtype = TorchDType::kF32;
  else if (type.s == "torch.HalfStorage") s.dtype = TorchDType::kF16;
  else if (type.s == "torch.BFloat16Storage") s.dtype = TorchDType::kBF16;
  else return fail("'" + type.s + "' is not a storage type");
  return push_new(std::move(s));
}

Status PickleMachine::set_items(const std::vector<uint32_t>& kv, uint32_t target) {
  if (at(target).kind != PickleKind::kDict) return fail("target is not a dict");
  if (kv.size() % 2 != 0) return fail("odd number of keys and values");
  if (at(target).items.size() + kv.size() > limits_.max_values) return fail("dict too large");
  auto& items = at(target).items;
  items.insert(items.end(), kv.begin(), kv.end());
  return ok_status();
}

Status PickleMachine::append_items(const std::vector<uint32_t>& values, uint32_t target) {
  if (at(target).kind != PickleKind::kList) return fail("target is not a list");
  if (at(target).items.size() + values.size() > limits_.max_values) return fail("list too large");
  auto& items = at(target).items;
  items.insert(items.end(), values.begin(), values.end());
  return ok_status();
}

// The opcodes that push a value read from the opcode's argument bytes.
Status PickleMachine::push_literal(uint8_t op) {
  PickleValue v;
  switch (op) {
    case 'X': case 0x8c: case 0x8d: {
      uint64_t n = 0;
      if (op == 'X') { uint32_t n32 = 0; LLMPACK_RETURN_IF_ERROR(read(&n32)); n = n32; }
      else if (op == 0x8c) { uint8_t n8 = 0; LLMPACK_RETURN_IF_ERROR(read(&n8)); n = n8; }
      else LLMPACK_RETURN_IF_ERROR(read(&n));
      v.kind = PickleKind::kString;
      LLMPACK_RETURN_IF_ERROR(read_bytes(n, &v.s));
      return push_new(std::move(v));
    }
    case 'J': { int32_t x = 0; LLMPACK_RETURN_IF_ERROR(read(&x)); v.i = x; break; }
    case 'K': { uint8_t x = 0; LLMPACK_RETURN_IF_ERROR(read(&x)); v.i = x; break; }
    case 'M': { uint16_t x = 0; LLMPACK_RETURN_IF_ERROR(read(&x)); v.i = x; break; }
    case 0x8a: {  // LONG1: n bytes, little-endian two's complement
      uint8_t n = 0;
      LLMPACK_RETURN_IF_ERROR(read(&n));
      if (n > 8) return fail("integer of " + std::to_string(n) + " bytes does not fit 64 bits");
      std::string raw;
      LLMPACK_RETURN_IF_ERROR(read_bytes(n, &raw));
      uint64_t u = 0;
      for (size_t k = 0; k < n; ++k) u |= uint64_t{static_cast<uint8_t>(raw[k])} << (8 * k);
      if (n > 0 && n < 8 && (static_cast<uint8_t>(raw[n - 1]) & 0x80)) u |= ~uint64_t{0} << (8 * n);
      v.i = static_cast<int64_t>(u);
      break;
    }
    case 'G': {  // BINFLOAT: big-endian double
      uint64_t be = 0;
      LLMPACK_RETURN_IF_ERROR(read(&be));
      be = __builtin_bswap64(be);
      v.kind = PickleKind::kFloat;
      std::memcpy(&v.f, &be, 8);
      return push_new(std::move(v));
    }
    default:
      return fail("not a literal opcode");
  }
  v.kind = PickleKind::kInt;  // the integer opcodes break out of the switch
  return push_new(std::move(v));
}

Status PickleMachine::step(uint8_t op) {
  PickleValue v;
  std::vector<uint32_t> items;
  switch (op) {
    case 0x80: {  // PROTO
      uint8_t proto = 0;
      LLMPACK_RETURN_IF_ERROR(read(&proto));
      if (proto < 2 || proto > 5) return fail("protocol " + std::to_string(proto) + ", expected 2..5");
      return ok_status();
    }
    case 0x95: { uint64_t n = 0; return read(&n); }  // FRAME: a length hint only
    case '}': v.kind = PickleKind::kDict; return push_new(std::move(v));
    case ']': v.kind = PickleKind::kList; return push_new(std::move(v));
    case ')': v.kind = PickleKind::kTuple; return push_new(std::move(v));
    case '(':
      if (marks_.size() >= limits_.max_stack) return fail("too many marks");
      marks_.push_back(stack_.size());
      return ok_status();
    case 'X': case 0x8c: case 0x8d: case 'J': case 'K': case 'M': case 0x8a: case 'G':
      return push_literal(op);
    case 'N': return push_new(std::move(v));
    case 0x88: case 0x89: v.kind = PickleKind::kBool; v.i = op == 0x88; return push_new(std::move(v));
    case 't':
      LLMPACK_RETURN_IF_ERROR(pop_mark(&items));
      v.kind = PickleKind::kTuple;
      v.items = std::move(items);
      return push_new(std::move(v));
    case 0x85: return tuple_of(1);
    case 0x86: return tuple_of(2);
    case 0x87: return tuple_of(3);
    case 'c': {
      std::string module, name;
      LLMPACK_RETURN_IF_ERROR(read_line(&module));
      LLMPACK_RETURN_IF_ERROR(read_line(&name));
      return global(module, name);
    }
    case 0x93: {  // STACK_GLOBAL
      uint32_t name_i = 0, module_i = 0;
      LLMPACK_RETURN_IF_ERROR(pop(&name_i));
      LLMPACK_RETURN_IF_ERROR(pop(&module_i));
      if (at(name_i).kind != PickleKind::kString || at(module_i).kind != PickleKind::kString)
        return fail("module and name are not strings");
      const std::string module = at(module_i).s, name = at(name_i).s;
      return global(module, name);
    }
    case 'R': return reduce();
    case 'Q': return persistent_id();
    case 'q': { uint8_t k = 0; LLMPACK_RETURN_IF_ERROR(read(&k)); return memo_put(k); }
    case 'r': { uint32_t k = 0; LLMPACK_RETURN_IF_ERROR(read(&k)); return memo_put(k); }
    case 0x94: return memo_put(memo_.size());
    case 'h': { uint8_t k = 0; LLMPACK_RETURN_IF_ERROR(read(&k)); return memo_get(k); }
    case 'j': { uint32_t k = 0; LLMPACK_RETURN_IF_ERROR(read(&k)); return memo_get(k); }
    case 's': case 'a': {
      uint32_t value = 0, key = 0;
      LLMPACK_RETURN_IF_ERROR(pop(&value));
      if (op == 's') LLMPACK_RETURN_IF_ERROR(pop(&key));
      if (stack_.size() <= floor()) return fail("no container on the stack");
      return op == 's' ? set_items({key, value}, stack_.back()) : append_items({value}, stack_.back());
    }
    case 'u': case 'e':
      LLMPACK_RETURN_IF_ERROR(pop_mark(&items));
      if (stack_.size() <= floor()) return fail("no container on the stack");
      return op == 'u' ? set_items(items, stack_.back()) : append_items(items, stack_.back());
    case 'b': {  // BUILD: OrderedDict state and tensor hooks carry nothing we need
      uint32_t state = 0;
      LLMPACK_RETURN_IF_ERROR(pop(&state));
      if (stack_.size() <= floor()) return fail("no object to build");
      return ok_status();
    }
    case '.':
      if (stack_.size() != 1 || !marks_.empty()) return fail("expected exactly one value on the stack");
      doc_.root_ = stack_.back();
      stopped_ = true;
      return ok_status();
    default:
      return error_status(describe(op) + " at byte " + std::to_string(op_pos_) +
                          " is not allowed (a state dict needs only plain data and tensors)");
  }
}

Result<PickleDocument> PickleDocument::parse(std::span<const uint8_t> bytes, const PickleLimits& limits) {
  PickleMachine m(bytes, limits);
  return m.run();
}

const PickleValue* PickleDocument::dict_get(const PickleValue& dict, std::string_view key) const {
  if (dict.kind != PickleKind::kDict) return nullptr;
  for (size_t k = 0; k + 1 < dict.items.size(); k += 2) {
    const PickleValue& kv = values_[dict.items[k]];
    if (kv.kind == PickleKind::kString && kv.s == key) return &values_[dict.items[k + 1]];
  }
  return nullptr;
}

}  // namespace llmpack
