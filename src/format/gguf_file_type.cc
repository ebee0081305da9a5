#include "format/gguf_file_type.h"

#include <map>

#include "format/gguf.h"

namespace llmpack {
namespace {

struct FileTypeWords {
  uint32_t number;
  std::string_view words;
};

// llama.cpp's `llama_ftype` numbers and the words its tools print for them.
// Numbers 4-6 and 33-35 were retired by llama.cpp and name nothing now.
constexpr FileTypeWords kFileTypes[] = {
    {0, "all F32"},
    {1, "F16"},
    {2, "Q4_0"},
    {3, "Q4_1"},
    {7, "Q8_0"},
    {8, "Q5_0"},
    {9, "Q5_1"},
    {10, "Q2_K - Medium"},
    {11, "Q3_K - Small"},
    {12, "Q3_K - Medium"},
    {13, "Q3_K - Large"},
    {14, "Q4_K - Small"},
    {15, "Q4_K - Medium"},
    {16, "Q5_K - Small"},
    {17, "Q5_K - Medium"},
    {18, "Q6_K"},
    {19, "IQ2_XXS - 2.0625 bpw"},
    {20, "IQ2_XS - 2.3125 bpw"},
    {21, "Q2_K - Small"},
    {22, "IQ3_XS - 3.3 bpw"},
    {23, "IQ3_XXS - 3.0625 bpw"},
    {24, "IQ1_S - 1.5625 bpw"},
    {25, "IQ4_NL - 4.5 bpw"},
    {26, "IQ3_S - 3.4375 bpw"},
    {27, "IQ3_S mix - 3.66 bpw"},
    {28, "IQ2_S - 2.5 bpw"},
    {29, "IQ2_M - 2.7 bpw"},
    {30, "IQ4_XS - 4.25 bpw"},
    {31, "IQ1_M - 1.75 bpw"},
    {32, "BF16"},
    {36, "TQ1_0 - 1.69 bpw ternary"},
    {37, "TQ2_0 - 2.06 bpw ternary"},
};

// llama.cpp's guess of a file type from the element type most tensors have:
// a K-quant majority reads as that type's medium mix.
std::optional<uint32_t> file_type_of_majority(DType majority) {
  switch (majority) {
    case DType::kF32: return 0;
    case DType::kF16: return 1;
    case DType::kBF16: return 32;
    case DType::kQ4_0: return 2;
    case DType::kQ4_1: return 3;
    case DType::kQ5_0: return 8;
    case DType::kQ5_1: return 9;
    case DType::kQ8_0: return 7;
    case DType::kQ2_K: return 10;
    case DType::kQ3_K: return 12;
    case DType::kQ4_K: return 15;
    case DType::kQ5_K: return 17;
    case DType::kQ6_K: return 18;
    case DType::kIQ2_XXS: return 19;
    case DType::kIQ2_XS: return 20;
    case DType::kIQ2_S: return 28;
    case DType::kIQ3_XXS: return 23;
    case DType::kIQ3_S: return 26;
    case DType::kIQ1_S: return 24;
    case DType::kIQ1_M: return 31;
    case DType::kIQ4_NL: return 25;
    case DType::kIQ4_XS: return 30;
    default: return std::nullopt;
  }
}

// The element type most of the file's tensors have; the first to reach the
// highest count wins a tie.
std::optional<DType> majority_tensor_type(const GgufFile& file) {
  std::map<DType, int> counts;
  std::optional<DType> best;
  int best_count = 0;
  for (const GgufTensorInfo& t : file.tensors()) {
    const int n = ++counts[t.dtype];
    if (n > best_count) best_count = n, best = t.dtype;
  }
  return best;
}

}  // namespace

std::optional<std::string_view> llama_file_type_words(uint32_t file_type) {
  for (const FileTypeWords& t : kFileTypes)
    if (t.number == file_type) return t.words;
  return std::nullopt;
}

std::string describe_file_type(const GgufFile& file) {
  if (const auto declared = file.get_int("general.file_type"); declared && *declared >= 0 && *declared <= UINT32_MAX) {
    const auto words = llama_file_type_words(static_cast<uint32_t>(*declared));
    return words ? std::string(*words) : "unknown, may not work";  // llama.cpp's words too
  }
  const auto majority = majority_tensor_type(file);
  if (!majority) return "(guessed) all F32";  // a file without tensors
  const auto guessed = file_type_of_majority(*majority);
  if (!guessed) return "(guessed) " + std::string(dtype_name(*majority));
  return "(guessed) " + std::string(*llama_file_type_words(*guessed));
}

}  // namespace llmpack
