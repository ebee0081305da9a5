#pragma once
// The file type a GGUF declares in `general.file_type` (llama.cpp's
// `llama_ftype` numbers), and the words llama.cpp's tools print for it, so
// that `llmpack bench` and `inspect` describe a file as llama-bench does:
// "llama 1.2B Q4_K - Medium".

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace llmpack {

class GgufFile;

// llama.cpp's description of a file type number ("Q4_K - Medium" for 15),
// or nullopt for a number it does not define.
std::optional<std::string_view> llama_file_type_words(uint32_t file_type);

// The file's type as llama.cpp describes it: from `general.file_type` when
// the file has a known one; otherwise guessed as llama.cpp guesses, from the
// element type most of the file's tensors have, after "(guessed) " (the
// order llama-bench, build 11669, prints: "llama ?B (guessed) Q4_K - Medium").
std::string describe_file_type(const GgufFile& file);

}  // namespace llmpack
