#include "tokenizer/hf_tokenizer_json_parser.h"

#include <charconv>
#include <cmath>

#include "core/utf8.h"

namespace llmpack {
namespace {

// Deep enough for any tokenizer.json, shallow enough for the stack.
constexpr int kMaxDepth = 64;

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

const JsonValue* JsonValue::get(std::string_view key) const {
  if (kind != Kind::kObject) return nullptr;
  for (size_t i = 0; i < keys.size() && i < items.size(); ++i) {
    if (keys[i] == key) return &items[i];
  }
  return nullptr;
}

std::string JsonValue::get_string(std::string_view key, std::string fallback) const {
  const JsonValue* v = get(key);
  return v != nullptr && v->is_string() ? v->string : fallback;
}

std::string json_kind_name(JsonValue::Kind kind) {
  switch (kind) {
    case JsonValue::Kind::kNull: return "null";
    case JsonValue::Kind::kBool: return "a boolean";
    case JsonValue::Kind::kNumber: return "a number";
    case JsonValue::Kind::kString: return "a string";
    case JsonValue::Kind::kArray: return "an array";
    case JsonValue::Kind::kObject: return "an object";
  }
  return "?";
}

Status JsonReader::error(const std::string& expected) const {
  std::string found = "the end of the input";
  if (pos_ < text_.size()) {
    const auto c = static_cast<unsigned char>(text_[pos_]);
    found = c >= 0x20 && c < 0x7F ? "'" + std::string(1, static_cast<char>(c)) + "'" : "byte " + std::to_string(c);
  }
  return Status::error("JSON: expected " + expected + " at byte " + std::to_string(pos_) + ", found " + found);
}

void JsonReader::skip_space() {
  while (pos_ < text_.size()) {
    const char c = text_[pos_];
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') break;
    ++pos_;
  }
}

bool JsonReader::consume(char c) {
  if (pos_ < text_.size() && text_[pos_] == c) {
    ++pos_;
    return true;
  }
  return false;
}

Status JsonReader::enter() {
  if (++depth_ > kMaxDepth) return error("at most " + std::to_string(kMaxDepth) + " nested arrays/objects");
  return ok_status();
}

Result<JsonValue::Kind> JsonReader::peek() {
  skip_space();
  if (pos_ >= text_.size()) return error("a value");
  switch (text_[pos_]) {
    case '{': return JsonValue::Kind::kObject;
    case '[': return JsonValue::Kind::kArray;
    case '"': return JsonValue::Kind::kString;
    case 't':
    case 'f': return JsonValue::Kind::kBool;
    case 'n': return JsonValue::Kind::kNull;
    default: break;
  }
  const char c = text_[pos_];
  if (c == '-' || (c >= '0' && c <= '9')) return JsonValue::Kind::kNumber;
  return error("a value");
}

Status JsonReader::read_string(std::string* out) {
  skip_space();
  if (!consume('"')) return error("a string");
  out->clear();
  while (true) {
    // Copy the run up to the next quote or escape in one go.
    size_t end = pos_;
    while (end < text_.size() && text_[end] != '"' && text_[end] != '\\' &&
           static_cast<unsigned char>(text_[end]) >= 0x20) {
      ++end;
    }
    out->append(text_.substr(pos_, end - pos_));
    pos_ = end;
    if (pos_ >= text_.size()) return error("'\"' closing a string");
    const char c = text_[pos_];
    if (c == '"') {
      ++pos_;
      return ok_status();
    }
    if (c != '\\') return error("no control character inside a string");
    ++pos_;
    if (pos_ >= text_.size()) return error("an escape character");
    const char e = text_[pos_++];
    switch (e) {
      case '"': *out += '"'; break;
      case '\\': *out += '\\'; break;
      case '/': *out += '/'; break;
      case 'b': *out += '\b'; break;
      case 'f': *out += '\f'; break;
      case 'n': *out += '\n'; break;
      case 'r': *out += '\r'; break;
      case 't': *out += '\t'; break;
      case 'u': {
        const auto read_hex4 = [&](uint32_t* v) -> bool {
          if (text_.size() - pos_ < 4) return false;
          *v = 0;
          for (int k = 0; k < 4; ++k) {
            const int h = hex_value(text_[pos_ + k]);
            if (h < 0) return false;
            *v = (*v << 4) | static_cast<uint32_t>(h);
          }
          pos_ += 4;
          return true;
        };
        uint32_t cp = 0;
        if (!read_hex4(&cp)) return error("four hex digits after \\u");
        if (cp >= 0xD800 && cp < 0xDC00) {  // a high surrogate needs its low half
          uint32_t lo = 0;
          if (text_.substr(pos_, 2) != "\\u") return error("a low surrogate \\uDC00..\\uDFFF after a high one");
          pos_ += 2;
          if (!read_hex4(&lo) || lo < 0xDC00 || lo > 0xDFFF) return error("a low surrogate \\uDC00..\\uDFFF");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp < 0xE000) {
          return error("no lone low surrogate");
        }
        append_utf8(cp, out);
        break;
      }
      default:
        --pos_;
        return error("one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u");
    }
  }
}

Status JsonReader::read_number(double* out) {
  skip_space();
  const size_t start = pos_;
  (void)consume('-');
  while (pos_ < text_.size() && ((text_[pos_] >= '0' && text_[pos_] <= '9') || text_[pos_] == '.' ||
                                 text_[pos_] == 'e' || text_[pos_] == 'E' || text_[pos_] == '+' ||
                                 text_[pos_] == '-')) {
    ++pos_;
  }
  const char* first = text_.data() + start;
  const char* last = text_.data() + pos_;
  const auto [ptr, ec] = std::from_chars(first, last, *out);
  if (ec != std::errc() || ptr != last || !std::isfinite(*out)) {
    pos_ = start;
    return error("a number");
  }
  return ok_status();
}

Status JsonReader::read_int(int64_t* out) {
  const size_t start = pos_;
  double v = 0;
  LLMPACK_RETURN_IF_ERROR(read_number(&v));
  if (v != std::floor(v) || v < -9.0e15 || v > 9.0e15) {
    pos_ = start;
    skip_space();
    return error("an integer");
  }
  *out = static_cast<int64_t>(v);
  return ok_status();
}

Status JsonReader::read_literal(std::string_view word) {
  skip_space();
  if (text_.substr(pos_, word.size()) != word) return error(std::string(word));
  pos_ += word.size();
  return ok_status();
}

Status JsonReader::read_bool(bool* out) {
  skip_space();
  if (pos_ < text_.size() && text_[pos_] == 't') {
    *out = true;
    return read_literal("true");
  }
  *out = false;
  if (pos_ < text_.size() && text_[pos_] == 'f') return read_literal("false");
  return error("true or false");
}

Status JsonReader::skip_value() {
  LLMPACK_ASSIGN_OR_RETURN(const JsonValue::Kind kind, peek());
  std::string scratch;
  switch (kind) {
    case JsonValue::Kind::kObject:
      return read_object([&](const std::string&) { return skip_value(); });
    case JsonValue::Kind::kArray:
      return read_array([&](size_t) { return skip_value(); });
    case JsonValue::Kind::kString:
      return read_string(&scratch);
    case JsonValue::Kind::kBool: {
      bool b = false;
      return read_bool(&b);
    }
    case JsonValue::Kind::kNull:
      return read_literal("null");
    case JsonValue::Kind::kNumber: {
      double d = 0;
      return read_number(&d);
    }
  }
  return error("a value");
}

Result<JsonValue> JsonReader::read_value() {
  LLMPACK_ASSIGN_OR_RETURN(const JsonValue::Kind kind, peek());
  JsonValue v;
  v.kind = kind;
  Status st;
  switch (kind) {
    case JsonValue::Kind::kObject:
      st = read_object([&](const std::string& key) -> Status {
        auto item = read_value();
        if (!item.ok()) return item.status();
        v.keys.push_back(key);
        v.items.push_back(std::move(*item));
        return ok_status();
      });
      break;
    case JsonValue::Kind::kArray:
      st = read_array([&](size_t) -> Status {
        auto item = read_value();
        if (!item.ok()) return item.status();
        v.items.push_back(std::move(*item));
        return ok_status();
      });
      break;
    case JsonValue::Kind::kString: st = read_string(&v.string); break;
    case JsonValue::Kind::kBool: st = read_bool(&v.boolean); break;
    case JsonValue::Kind::kNull: st = read_literal("null"); break;
    case JsonValue::Kind::kNumber: st = read_number(&v.number); break;
  }
  if (!st.ok()) return st;
  return v;
}

Status JsonReader::expect_end() {
  skip_space();
  if (pos_ != text_.size()) return error("the end of the input");
  return ok_status();
}

}  // namespace llmpack
