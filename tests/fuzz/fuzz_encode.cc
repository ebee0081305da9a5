// libFuzzer target: arbitrary text through the real vocabularies of
// ../shared/fixtures (Llama 3's and Qwen3's tokenizer.json, Llama 2's
// SentencePiece vocabulary in GGUF form, llama2.c's tok512.bin), checked
// against what must hold for any input:
//  - byte-level BPE: decoding the ids gives the text back (NFC-normalized for
//    Qwen3), whatever the bytes; where the text holds no added token's text,
//    the ids are the quadratic reference's (unit/tokenizer/reference_bpe.h);
//  - SentencePiece: for valid UTF-8 the ids are the quadratic reference
//    encoder's (unit/tokenizer/reference_encoder.h) and decoding gives the
//    text back; any other bytes encode or fail cleanly;
//  - with parse_special on, every id still decodes.
// A broken property traps, so libFuzzer keeps the input. Without the fixtures
// the target says so once and checks nothing (LLMPACK_FIXTURES names another
// folder).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/utf8.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/pretokenizer_nfc.h"
#include "tokenizer/spm_tokenizer.h"
#include "tokenizer/tokenizer_loader.h"
#include "unit/tokenizer/reference_bpe.h"
#include "unit/tokenizer/reference_encoder.h"

namespace {

using namespace llmpack;

// The reference encoders are quadratic in the text; longer inputs get the
// round trip only.
constexpr size_t kReferenceMaxBytes = 512;

std::string fixture(const char* relative) {
  const char* env = std::getenv("LLMPACK_FIXTURES");
  return (std::filesystem::path(env ? env : LLMPACK_FIXTURES_DIR) / relative).string();
}

std::unique_ptr<Tokenizer> load(const char* relative) {
  const std::string path = fixture(relative);
  if (!std::filesystem::exists(path)) {
    std::fprintf(stderr, "fuzz_encode: fixture not found, not fuzzed: %s\n", path.c_str());
    return nullptr;
  }
  auto tok = load_tokenizer(path);
  if (!tok.ok()) {
    std::fprintf(stderr, "fuzz_encode: %s: %s\n", path.c_str(), tok.status().message().c_str());
    std::abort();
  }
  return std::move(*tok);
}

std::string decode_all(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  std::string out;
  int32_t prev = -1;
  for (int32_t id : ids) {
    auto piece = tok.decode(prev, id);
    if (!piece.ok()) __builtin_trap();  // every id encode gives must decode
    out += *piece;
    prev = id;
  }
  return out;
}

// The texts of a tokenizer's non-normal tokens (cut out before BPE runs).
std::vector<std::string> added_texts(const BpeTokenizer& tok) {
  std::vector<std::string> texts;
  const auto& types = tok.vocab().types;
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] != TokenType::kNormal) texts.emplace_back(tok.vocab().tokens[i]);
  }
  return texts;
}

struct BpeCase {
  std::unique_ptr<Tokenizer> tok;
  std::unique_ptr<testing::ReferenceBpe> reference;
  std::vector<std::string> added;
};

BpeCase bpe_case(const char* relative) {
  BpeCase c;
  c.tok = load(relative);
  if (!c.tok) return c;
  const auto* bpe = dynamic_cast<const BpeTokenizer*>(c.tok.get());
  if (!bpe) std::abort();
  auto ref = testing::ReferenceBpe::create(bpe->vocab());
  if (!ref.ok()) std::abort();
  c.reference = std::move(*ref);
  c.added = added_texts(*bpe);
  return c;
}

void check_bpe(const BpeCase& c, std::string_view text) {
  if (!c.tok) return;
  auto ids = c.tok->encode(text, 0, 0);
  if (!ids.ok()) __builtin_trap();  // byte-level BPE takes any bytes
  const bool nfc = static_cast<const BpeTokenizer*>(c.tok.get())->vocab().nfc;
  if (decode_all(*c.tok, *ids) != (nfc ? nfc_normalize(text) : std::string(text))) __builtin_trap();
  if (text.size() > kReferenceMaxBytes) return;
  for (const auto& added : c.added) {
    if (text.find(added) != std::string_view::npos) return;
  }
  auto expected = c.reference->encode(text);
  if (!expected.ok() || *expected != *ids) __builtin_trap();
}

struct SpmCase {
  std::unique_ptr<Tokenizer> tok;
  std::unique_ptr<testing::ReferenceEncoder> reference;
};

SpmCase spm_case(const char* relative) {
  SpmCase c;
  c.tok = load(relative);
  if (!c.tok) return c;
  const auto* spm = dynamic_cast<const SpmTokenizer*>(c.tok.get());
  if (!spm) std::abort();
  c.reference = std::make_unique<testing::ReferenceEncoder>(spm->vocab(), spm->uses_meta_space());
  return c;
}

void check_spm(const SpmCase& c, std::string_view text) {
  if (!c.tok) return;
  auto ids = c.tok->encode(text, 0, 0);
  if (utf8_first_invalid(text) != std::string_view::npos) return;  // encoded or refused: either is fine
  if (!ids.ok()) __builtin_trap();
  // A literal U+2581 reads as a space in a vocabulary that spells spaces so.
  const bool meta_space = static_cast<const SpmTokenizer*>(c.tok.get())->uses_meta_space();
  if (!(meta_space && text.find("\xE2\x96\x81") != std::string_view::npos) && decode_all(*c.tok, *ids) != text) {
    __builtin_trap();
  }
  if (text.size() <= kReferenceMaxBytes && c.reference->encode(text) != *ids) __builtin_trap();
}

void check_special(const Tokenizer* tok, std::string_view text) {
  if (!tok) return;
  EncodeOptions options;
  options.parse_special = true;
  auto ids = tok->encode(text, options);
  if (ids.ok()) (void)decode_all(*tok, *ids);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const BpeCase llama3 = bpe_case("hf-tokenizers/llama3/tokenizer.json.gz");
  static const BpeCase qwen3 = bpe_case("hf-tokenizers/qwen3/tokenizer.json.gz");
  static const SpmCase llama2 = spm_case("llama.cpp-vocab/ggml-vocab-llama-spm.gguf");
  static const SpmCase tok512 = spm_case("llama2c/tok512.bin");
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  check_bpe(llama3, text);
  check_bpe(qwen3, text);
  check_spm(llama2, text);
  check_spm(tok512, text);
  check_special(llama3.tok.get(), text);
  check_special(qwen3.tok.get(), text);
  check_special(llama2.tok.get(), text);
  return 0;
}
