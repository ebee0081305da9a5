// SentencePiece `.model` files (a protobuf ModelProto), read with a small
// validating protobuf decoder (no libprotobuf):
//   ModelProto      1: repeated SentencePiece, 2: TrainerSpec, 3: NormalizerSpec
//   SentencePiece   1: piece (string), 2: score (float), 3: type (1 normal,
//                   2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte)
//   TrainerSpec     3: model_type (1 unigram, 2 BPE), 4: vocab_size,
//                   35: byte_fallback, 40: unk_id, 41: bos_id, 42: eos_id, 43: pad_id
//   NormalizerSpec  1: name, 3: add_dummy_prefix, 4: remove_extra_whitespaces
// Fields not listed are skipped; every length is checked against the file.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace llmpack {

struct SentencePieceModel {
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::vector<int32_t> types;        // SentencePiece type numbers (1 normal, ..., 6 byte)
  int32_t model_type = 1;            // 1 unigram, 2 BPE
  int32_t vocab_size = 0;            // trainer_spec (informational)
  bool byte_fallback = false;
  int32_t unk_id = 0, bos_id = 1, eos_id = 2, pad_id = -1;
  std::string normalizer_name;
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
};

Result<SentencePieceModel> parse_sentencepiece_model(std::span<const uint8_t> bytes);
Result<SentencePieceModel> read_sentencepiece_model(const std::string& path);

}  // namespace llmpack
