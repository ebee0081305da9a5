// A small pull parser for JSON, made for HF tokenizer.json files: the big
// parts (a 128k-entry vocab, 280k merges) are read straight into the
// tokenizer's tables through callbacks, with no document tree; the small
// parts (normalizer, pre_tokenizer, ...) can be read as a JsonValue tree.
// A DOM parse of Llama 3's 9 MB file takes over a second; this takes a tenth.
// Every error names the byte offset and what was expected there.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace llmpack {

struct JsonValue {
  enum class Kind : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  // kArray: the items; kObject: the member values, in file order, named by
  // keys (parallel vectors: a pair<string, JsonValue> member would need
  // JsonValue complete here).
  std::vector<JsonValue> items;
  std::vector<std::string> keys;

  // The member named `key` of an object, or nullptr.
  const JsonValue* get(std::string_view key) const;
  // The string member `key`, or `fallback` when absent or not a string.
  std::string get_string(std::string_view key, std::string fallback = {}) const;
  bool is_string() const { return kind == Kind::kString; }
  bool is_null() const { return kind == Kind::kNull; }
};

// Name of a kind for messages ("an object").
std::string json_kind_name(JsonValue::Kind kind);

class JsonReader {
 public:
  explicit JsonReader(std::string_view text) : text_(text) {}

  // The kind of the next value (after whitespace); an error at the end of
  // input or on a character no value starts with.
  Result<JsonValue::Kind> peek();
  Status read_string(std::string* out);
  Status read_int(int64_t* out);  // an integral number that fits
  Status read_bool(bool* out);
  Status skip_value();
  Result<JsonValue> read_value();
  // Reads an object, calling on_member(key) for each member; on_member must
  // consume the member's value and return a Status.
  template <typename F>
  Status read_object(F&& on_member);
  // Reads an array, calling on_item(index) for each item, which it must consume.
  template <typename F>
  Status read_array(F&& on_item);
  // Only whitespace may follow.
  Status expect_end();
  size_t offset() const { return pos_; }
  Status error(const std::string& expected) const;

 private:
  void skip_space();
  bool consume(char c);
  Status enter();  // nesting depth check
  Status read_number(double* out);
  Status read_literal(std::string_view word);

  std::string_view text_;
  size_t pos_ = 0;
  int depth_ = 0;
};

template <typename F>
Status JsonReader::read_object(F&& on_member) {
  skip_space();
  if (!consume('{')) return error("'{'");
  LLMPACK_RETURN_IF_ERROR(enter());
  skip_space();
  if (!consume('}')) {
    std::string key;
    while (true) {
      skip_space();
      LLMPACK_RETURN_IF_ERROR(read_string(&key));
      skip_space();
      if (!consume(':')) return error("':' after an object key");
      LLMPACK_RETURN_IF_ERROR(on_member(key));
      skip_space();
      if (consume('}')) break;
      if (!consume(',')) return error("',' or '}' in an object");
    }
  }
  --depth_;
  return ok_status();
}

template <typename F>
Status JsonReader::read_array(F&& on_item) {
  skip_space();
  if (!consume('[')) return error("'['");
  LLMPACK_RETURN_IF_ERROR(enter());
  skip_space();
  if (!consume(']')) {
    for (size_t i = 0;; ++i) {
      LLMPACK_RETURN_IF_ERROR(on_item(i));
      skip_space();
      if (consume(']')) break;
      if (!consume(',')) return error("',' or ']' in an array");
    }
  }
  --depth_;
  return ok_status();
}

}  // namespace llmpack
