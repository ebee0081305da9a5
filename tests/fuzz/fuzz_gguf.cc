// libFuzzer target: GgufFile::from_bytes on arbitrary bytes. Every value the
// reader returns is touched (metadata, getters, every tensor byte) so that an
// accepted but inconsistent file shows up as an ASan report.
#include <cstddef>
#include <cstdint>
#include <span>

#include "format/gguf.h"

namespace {

volatile uint64_t g_sink = 0;

void touch_value(const llmpack::GgufValue& v) {
  uint64_t h = static_cast<uint64_t>(v.type) * 31 + static_cast<uint64_t>(v.array_type);
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          for (char c : x) h += static_cast<uint8_t>(c);
        } else if constexpr (std::is_same_v<T, llmpack::StringTable>) {
          for (std::string_view s : x) h += s.size() + (s.empty() ? 0 : static_cast<uint8_t>(s.back()));
        } else if constexpr (std::is_same_v<T, std::vector<bool>>) {
          for (bool b : x) h += b;
        } else if constexpr (std::is_arithmetic_v<T>) {
          h += static_cast<uint64_t>(x != T{});
        } else {
          for (const auto& e : x) h += static_cast<uint64_t>(e != 0);
        }
      },
      v.value);
  g_sink = g_sink + h;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = llmpack::GgufFile::from_bytes(std::span<const uint8_t>(data, size));
  if (!f.ok()) {
    g_sink = g_sink + f.status().message().size();
    return 0;
  }
  const llmpack::GgufFile& g = **f;
  uint64_t h = g.version() + g.alignment() + g.file_size();
  for (const auto& [key, value] : g.metadata()) {
    h += key.size();
    touch_value(value);
    h += g.get_uint(key).value_or(0) + static_cast<uint64_t>(g.get_int(key).value_or(0));
    h += static_cast<uint64_t>(g.get_float(key).value_or(0.0) != 0.0);
    h += g.get_bool(key).value_or(false) + g.get_string(key).value_or("").size();
    if (const auto* sa = g.get_string_array(key)) h += sa->size();
    if (auto fa = g.get_float_array(key)) h += fa->size();
    if (auto ia = g.get_int_array(key)) h += ia->size();
  }
  for (const auto& t : g.tensors()) {
    h += t.name.size() + static_cast<uint64_t>(t.n_elements()) + t.offset +
         static_cast<uint32_t>(t.dtype);
    for (int64_t d : t.ne) h += static_cast<uint64_t>(d);
    for (uint64_t i = 0; i < t.n_bytes; ++i) h += t.data[i];  // every byte must be in bounds
    if (g.find_tensor(t.name) != &t) __builtin_trap();
  }
  g_sink = g_sink + h;
  return 0;
}
