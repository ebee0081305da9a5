// Reading llama.cpp's tokenizer test vectors (*.gguf.inp / *.gguf.out) and
// the shared byte-level tokenizers used by several test files (loaded once:
// the 9-11 MB tokenizer.json files are slow under sanitizers).
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/fixtures.h"
#include "tokenizer/tokenizer.h"

namespace llmpack::testing {

inline std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Cases are separated by (and the file ends with) "\n__ggml_vocab_test__\n".
inline std::vector<std::string> parse_vocab_inputs(const std::string& raw) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < raw.size()) {
    const size_t next = raw.find(sep, pos);
    if (next == std::string::npos) {
      out.push_back(raw.substr(pos));
      break;
    }
    out.push_back(raw.substr(pos, next - pos));
    pos = next + sep.size();
  }
  return out;
}

inline std::vector<std::vector<int32_t>> parse_vocab_outputs(const std::string& raw) {
  std::vector<std::vector<int32_t>> out;
  std::istringstream lines(raw);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream nums(line);
    std::vector<int32_t> ids;
    int64_t id;
    while (nums >> id) ids.push_back(static_cast<int32_t>(id));
    out.push_back(ids);
  }
  return out;
}

// Llama 3 / Qwen3 tokenizer.json.gz, loaded once per test binary (nullptr
// when the fixture is absent or fails to load; tests check).
const Tokenizer* shared_llama3_json();
const Tokenizer* shared_qwen3_json();

}  // namespace llmpack::testing
