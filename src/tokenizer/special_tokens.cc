#include "tokenizer/special_tokens.h"

#include <algorithm>

#include "tokenizer/tokenizer.h"

namespace llmpack {
namespace {

// Pieces that close a turn in the chat formats we know (Llama 3, ChatML,
// Phi-3, Gemma, DeepSeek, Mistral-style "<|end|>").
constexpr std::string_view kEndOfTurnPieces[] = {
    "<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|end_of_turn|>",
    "<|endoftext|>", "<|end_of_text|>", "<EOT>", "<｜end▁of▁sentence｜>", "<|END_OF_TURN_TOKEN|>", "</s>",
};

}  // namespace

void SpecialTokenMatcher::add(std::string text, int32_t id) {
  if (text.empty()) return;
  const auto first = static_cast<unsigned char>(text[0]);
  entries_.push_back({std::move(text), id});
  std::vector<uint32_t>& bucket = by_first_byte_[first];
  bucket.push_back(static_cast<uint32_t>(entries_.size() - 1));
  // Longest first; equal texts keep the first added (the lowest id).
  std::stable_sort(bucket.begin(), bucket.end(),
                   [&](uint32_t a, uint32_t b) { return entries_[a].text.size() > entries_[b].text.size(); });
}

std::vector<SpecialTokenMatcher::Segment> SpecialTokenMatcher::split(std::string_view text) const {
  std::vector<Segment> out;
  size_t plain_start = 0;
  size_t i = 0;
  while (i < text.size()) {
    const std::vector<uint32_t>& bucket = by_first_byte_[static_cast<unsigned char>(text[i])];
    const Entry* hit = nullptr;
    for (uint32_t e : bucket) {
      const std::string& t = entries_[e].text;
      if (text.size() - i >= t.size() && text.compare(i, t.size(), t) == 0) {
        hit = &entries_[e];
        break;
      }
    }
    if (hit == nullptr) {
      ++i;
      continue;
    }
    if (i > plain_start) out.push_back({text.substr(plain_start, i - plain_start), -1});
    out.push_back({text.substr(i, hit->text.size()), hit->id});
    i += hit->text.size();
    plain_start = i;
  }
  if (plain_start < text.size()) out.push_back({text.substr(plain_start), -1});
  return out;
}

bool is_end_of_turn_piece(std::string_view piece) {
  return std::find(std::begin(kEndOfTurnPieces), std::end(kEndOfTurnPieces), piece) != std::end(kEndOfTurnPieces);
}

// Default for tokenizers that only know the 3-argument encode: cut the text
// at special pieces and encode the plain parts one by one.
Result<std::vector<int32_t>> Tokenizer::encode(std::string_view text, const EncodeOptions& options) const {
  if (!options.parse_special) return encode(text, options.n_bos, options.n_eos);
  SpecialTokenMatcher matcher;
  for (int32_t id : special_token_ids()) matcher.add(piece(id), id);
  if (matcher.empty()) return encode(text, options.n_bos, options.n_eos);
  // BOS / EOS checks and ids come from the tokenizer's own encode.
  LLMPACK_ASSIGN_OR_RETURN(std::vector<int32_t> ids, encode(std::string_view(), options.n_bos, 0));
  for (const SpecialTokenMatcher::Segment& seg : matcher.split(text)) {
    if (seg.id >= 0) {
      ids.push_back(seg.id);
      continue;
    }
    LLMPACK_ASSIGN_OR_RETURN(std::vector<int32_t> part, encode(seg.text, 0, 0));
    ids.insert(ids.end(), part.begin(), part.end());
  }
  LLMPACK_ASSIGN_OR_RETURN(std::vector<int32_t> eos, encode(std::string_view(), 0, options.n_eos));
  ids.insert(ids.end(), eos.begin(), eos.end());
  return ids;
}

std::vector<int32_t> Tokenizer::end_of_turn_ids() const {
  std::vector<int32_t> ids;
  for (int32_t id : special_token_ids()) {
    if (id != eos_id() && is_end_of_turn_piece(piece(id))) ids.push_back(id);
  }
  return ids;
}

}  // namespace llmpack
