#include "format/safetensors_file.h"

#include <algorithm>
#include <cstring>

#include <nlohmann/json.hpp>

namespace llmpack {
namespace {

// Real headers are a few hundred KB; this bounds what a hostile length costs.
constexpr uint64_t kMaxHeader = uint64_t{100} << 20;

Result<SafetensorsDType> parse_dtype(const std::string& name, const std::string& tensor) {
  if (name == "F32") return SafetensorsDType::kF32;
  if (name == "F16") return SafetensorsDType::kF16;
  if (name == "BF16") return SafetensorsDType::kBF16;
  return error_status("tensor '" + tensor + "' has dtype '" + name + "', expected F32, F16 or BF16");
}

Status parse_entry(const std::string& name, const nlohmann::json& j, std::span<const uint8_t> data,
                   SafetensorsTensor* t) {
  if (!j.is_object()) return error_status("tensor '" + name + "': expected an object");
  auto dtype = j.find("dtype");
  auto shape = j.find("shape");
  auto offsets = j.find("data_offsets");
  if (dtype == j.end() || !dtype->is_string() || shape == j.end() || !shape->is_array() || offsets == j.end() ||
      !offsets->is_array() || offsets->size() != 2)
    return error_status("tensor '" + name + "': expected dtype, shape and data_offsets [begin, end]");
  t->name = name;
  LLMPACK_ASSIGN_OR_RETURN(t->dtype, parse_dtype(dtype->get<std::string>(), name));
  if (shape->size() > 8) return error_status("tensor '" + name + "' has " + std::to_string(shape->size()) + " dimensions");
  uint64_t numel = 1;
  for (const auto& d : *shape) {
    if (!d.is_number_unsigned()) return error_status("tensor '" + name + "': shape entries must be non-negative integers");
    const uint64_t n = d.get<uint64_t>();
    if (n > (uint64_t{1} << 40) || (n != 0 && numel > (uint64_t{1} << 40) / n))
      return error_status("tensor '" + name + "' has too many elements");
    numel *= n;
    t->shape.push_back(static_cast<int64_t>(n));
  }
  if (!(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned())
    return error_status("tensor '" + name + "': data_offsets must be non-negative integers");
  const uint64_t begin = (*offsets)[0].get<uint64_t>(), end = (*offsets)[1].get<uint64_t>();
  if (begin > end || end > data.size())
    return error_status("tensor '" + name + "' data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                        "] fall outside the data section of " + std::to_string(data.size()) + " bytes");
  const uint64_t expected = numel * static_cast<uint64_t>(safetensors_dtype_size(t->dtype));
  if (end - begin != expected)
    return error_status("tensor '" + name + "' spans " + std::to_string(end - begin) + " bytes, its shape and dtype need " +
                        std::to_string(expected));
  t->bytes = data.subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin));
  return ok_status();
}

}  // namespace

int64_t safetensors_dtype_size(SafetensorsDType t) { return t == SafetensorsDType::kF32 ? 4 : 2; }

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
  auto file = MappedFile::open(path);
  if (!file.ok()) return file.status();
  return from_file(std::move(file).value());
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::from_file(std::unique_ptr<MappedFile> file) {
  std::unique_ptr<SafetensorsFile> st(new SafetensorsFile());
  st->file_ = std::move(file);
  if (auto s = st->parse(); !s.ok()) return s.with_context("safetensors " + st->file_->path());
  return st;
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

Status SafetensorsFile::parse() {
  const std::span<const uint8_t> b = file_->bytes();
  if (b.size() < 8) return error_status("file of " + std::to_string(b.size()) + " bytes has no header length");
  uint64_t n = 0;
  std::memcpy(&n, b.data(), 8);
  if (n > kMaxHeader || n > b.size() - 8)
    return error_status("header length " + std::to_string(n) + " exceeds the file (" + std::to_string(b.size()) +
                        " bytes)");
  const auto* text = reinterpret_cast<const char*>(b.data() + 8);
  const nlohmann::json header = nlohmann::json::parse(text, text + n, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) return error_status("header is not a JSON object");
  const std::span<const uint8_t> data = b.subspan(static_cast<size_t>(8 + n));
  try {
    for (const auto& [name, entry] : header.items()) {
      if (name == "__metadata__") {
        if (!entry.is_object()) return error_status("__metadata__ is not an object");
        for (const auto& [k, v] : entry.items())
          if (v.is_string()) metadata_[k] = v.get<std::string>();
        continue;
      }
      SafetensorsTensor t;
      LLMPACK_RETURN_IF_ERROR(parse_entry(name, entry, data, &t));
      tensors_.push_back(std::move(t));
    }
  } catch (const std::exception& e) {  // defensive: every access above is type-checked
    return error_status(std::string("malformed header: ") + e.what());
  }
  // Overlapping tensors mean a damaged or hostile file.
  std::vector<std::pair<const uint8_t*, size_t>> spans;
  for (const auto& t : tensors_)
    if (!t.bytes.empty()) spans.emplace_back(t.bytes.data(), t.bytes.size());
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i)
    if (spans[i - 1].first + spans[i - 1].second > spans[i].first)
      return error_status("two tensors overlap in the data section");
  return ok_status();
}

}  // namespace llmpack
