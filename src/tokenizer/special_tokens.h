// Special tokens inside text: finding "<|eot_id|>"-style pieces in a prompt
// (only when parse_special asks for it) and naming the pieces that end a turn.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace llmpack {

// Finds token texts in a string, leftmost first and then longest, so
// "<|eot_id|>" wins over a shorter token that is its prefix.
class SpecialTokenMatcher {
 public:
  struct Segment {
    std::string_view text;
    int32_t id = -1;  // -1: plain text to tokenize; else the token's id
  };

  // Empty texts are ignored (they would match everywhere).
  void add(std::string text, int32_t id);
  bool empty() const { return entries_.empty(); }
  // `text` cut into plain-text and token segments, in order; the views point
  // into `text`. Plain segments are never empty.
  std::vector<Segment> split(std::string_view text) const;

 private:
  struct Entry {
    std::string text;
    int32_t id;
  };
  std::vector<Entry> entries_;
  // Indices into entries_ by first byte, longest text first.
  std::array<std::vector<uint32_t>, 256> by_first_byte_;
};

// Whether `piece` is one chat models use to end a turn: <|eot_id|>,
// <|eom_id|>, <|im_end|>, <|end|>, <end_of_turn>, <|endoftext|>, ...
bool is_end_of_turn_piece(std::string_view piece);

}  // namespace llmpack
