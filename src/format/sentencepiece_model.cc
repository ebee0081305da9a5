#include "format/sentencepiece_model.h"

#include <cstring>

#include "format/mapped_file.h"

namespace llmpack {
namespace {

struct Field {
  uint32_t number = 0;
  uint32_t wire = 0;
  uint64_t varint = 0;                // wire 0, and the raw bits of wire 1 / 5
  std::span<const uint8_t> bytes;     // wire 2
};

class ProtoReader {
 public:
  ProtoReader(std::span<const uint8_t> b, const char* what) : b_(b), what_(what) {}
  bool done() const { return pos_ >= b_.size(); }

  Status next(Field* f) {
    const uint64_t start = pos_;
    uint64_t key = 0;
    LLMPACK_RETURN_IF_ERROR(varint(&key));
    f->number = static_cast<uint32_t>(key >> 3);
    f->wire = static_cast<uint32_t>(key & 7);
    if (f->number == 0 || (key >> 3) > 0x1FFFFFFF) return error("field number 0 or out of range", start);
    switch (f->wire) {
      case 0: return varint(&f->varint);
      case 1: return fixed(8, f);
      case 5: return fixed(4, f);
      case 2: {
        uint64_t n = 0;
        LLMPACK_RETURN_IF_ERROR(varint(&n));
        if (n > b_.size() - pos_)
          return error("length " + std::to_string(n) + " runs past the end (" + std::to_string(b_.size() - pos_) +
                       " bytes left)", start);
        f->bytes = b_.subspan(static_cast<size_t>(pos_), static_cast<size_t>(n));
        pos_ += n;
        return ok_status();
      }
      default:
        return error("unsupported wire type " + std::to_string(f->wire), start);
    }
  }

 private:
  Status varint(uint64_t* out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= b_.size()) return error("truncated varint", pos_);
      const uint8_t byte = b_[pos_++];
      v |= uint64_t{byte & 0x7Fu} << shift;
      if (!(byte & 0x80)) {
        *out = v;
        return ok_status();
      }
    }
    return error("varint longer than 10 bytes", pos_);
  }
  Status fixed(size_t n, Field* f) {
    if (b_.size() - pos_ < n) return error("truncated fixed-width value", pos_);
    f->varint = 0;
    std::memcpy(&f->varint, b_.data() + pos_, n);
    pos_ += n;
    return ok_status();
  }
  Status error(const std::string& msg, uint64_t at) const {
    return error_status(std::string("SentencePiece model: ") + what_ + ": " + msg + " at byte " + std::to_string(at));
  }

  std::span<const uint8_t> b_;
  const char* what_;
  uint64_t pos_ = 0;
};

float as_float(const Field& f) {
  float x = 0;
  const uint32_t bits = static_cast<uint32_t>(f.varint);
  std::memcpy(&x, &bits, 4);
  return x;
}

Status parse_piece(std::span<const uint8_t> b, SentencePieceModel* m) {
  ProtoReader r(b, "piece");
  std::string piece;
  float score = 0;
  int32_t type = 1;
  while (!r.done()) {
    Field f;
    LLMPACK_RETURN_IF_ERROR(r.next(&f));
    if (f.number == 1 && f.wire == 2) piece.assign(reinterpret_cast<const char*>(f.bytes.data()), f.bytes.size());
    else if (f.number == 2 && f.wire == 5) score = as_float(f);
    else if (f.number == 3 && f.wire == 0) type = static_cast<int32_t>(f.varint);
  }
  if (type < 1 || type > 6)
    return error_status("SentencePiece model: piece " + std::to_string(m->pieces.size()) + " has type " +
                        std::to_string(type) + ", expected 1..6");
  m->pieces.push_back(std::move(piece));
  m->scores.push_back(score);
  m->types.push_back(type);
  return ok_status();
}

int32_t as_id(const Field& f) { return static_cast<int32_t>(static_cast<int64_t>(f.varint)); }

Status parse_trainer(std::span<const uint8_t> b, SentencePieceModel* m) {
  ProtoReader r(b, "trainer_spec");
  while (!r.done()) {
    Field f;
    LLMPACK_RETURN_IF_ERROR(r.next(&f));
    if (f.wire != 0) continue;
    switch (f.number) {
      case 3: m->model_type = as_id(f); break;
      case 4: m->vocab_size = as_id(f); break;
      case 35: m->byte_fallback = f.varint != 0; break;
      case 40: m->unk_id = as_id(f); break;
      case 41: m->bos_id = as_id(f); break;
      case 42: m->eos_id = as_id(f); break;
      case 43: m->pad_id = as_id(f); break;
      default: break;
    }
  }
  return ok_status();
}

Status parse_normalizer(std::span<const uint8_t> b, SentencePieceModel* m) {
  ProtoReader r(b, "normalizer_spec");
  while (!r.done()) {
    Field f;
    LLMPACK_RETURN_IF_ERROR(r.next(&f));
    if (f.number == 1 && f.wire == 2) m->normalizer_name.assign(reinterpret_cast<const char*>(f.bytes.data()), f.bytes.size());
    else if (f.number == 3 && f.wire == 0) m->add_dummy_prefix = f.varint != 0;
    else if (f.number == 4 && f.wire == 0) m->remove_extra_whitespaces = f.varint != 0;
  }
  return ok_status();
}

}  // namespace

Result<SentencePieceModel> parse_sentencepiece_model(std::span<const uint8_t> bytes) {
  SentencePieceModel m;
  ProtoReader r(bytes, "ModelProto");
  while (!r.done()) {
    Field f;
    LLMPACK_RETURN_IF_ERROR(r.next(&f));
    if (f.wire != 2) continue;
    if (f.number == 1) LLMPACK_RETURN_IF_ERROR(parse_piece(f.bytes, &m));
    else if (f.number == 2) LLMPACK_RETURN_IF_ERROR(parse_trainer(f.bytes, &m));
    else if (f.number == 3) LLMPACK_RETURN_IF_ERROR(parse_normalizer(f.bytes, &m));
  }
  if (m.pieces.empty()) return error_status("SentencePiece model: no pieces (not a .model file?)");
  const int32_t n = static_cast<int32_t>(m.pieces.size());
  for (int32_t* id : {&m.unk_id, &m.bos_id, &m.eos_id, &m.pad_id})
    if (*id >= n) *id = -1;  // ids past the vocabulary mean "none"
  return m;
}

Result<SentencePieceModel> read_sentencepiece_model(const std::string& path) {
  auto file = MappedFile::open(path);
  if (!file.ok()) return file.status();
  return parse_sentencepiece_model((*file)->bytes()).with_context("reading " + path);
}

}  // namespace llmpack
