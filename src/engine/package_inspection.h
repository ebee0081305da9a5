// What `llmpack inspect` reports about a package (docs/CONTRACT.md I1): the
// model, its tensors, the contract as written and as the engine serves it,
// forward's method meta, the tokenizer, and findings about inconsistencies.
// Inspection never refuses a package: what loading would refuse becomes a finding.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/llama_program.h"

namespace llmpack {

// One tensor of a GGUF, as `inspect --tensors` lists it.
struct TensorEntry {
  std::string name;
  std::string type;            // "q4_0"
  std::vector<int64_t> shape;  // GGUF order: shape[0] is the row length
  uint64_t bytes = 0;
  uint64_t offset = 0;         // from the start of the data section
};

struct PackageReport {
  std::string path;
  std::string format;  // "gguf" or "llama2c"
  uint64_t file_bytes = 0;
  ModelConfig config;
  bool config_ok = false;
  std::string config_error;
  std::map<std::string, int64_t> dtype_tensor_counts;  // "q8_0" -> 32
  std::map<std::string, uint64_t> dtype_bytes;
  int64_t n_tensors = 0;
  int64_t n_params = 0;
  std::vector<TensorEntry> tensor_list;  // a GGUF's tensors in file order (empty for llama2.c)
  std::string file_type;  // llama.cpp's words for a GGUF's file type ("Q4_K - Medium"); empty for llama2.c
  // The importance matrix the weights were quantized with (llama-quantize's
  // quantize.imatrix.* keys, which `export --imatrix` writes too); empty file: none recorded.
  struct ImatrixUsed {
    std::string file, dataset;
    int64_t entries = -1, chunks = -1;  // -1: not recorded
  } imatrix;
  // The contract keys as written (absent keys are missing from the map).
  nlohmann::ordered_json contract_keys = nlohmann::ordered_json::object();
  bool has_contract_keys = false;
  // The contract the engine serves (after P2 defaults), when it loads.
  bool loads = false;
  std::string load_error;
  PackageContract contract;
  MethodMeta forward_meta;
  std::string tokenizer_kind;
  int64_t tokenizer_vocab_size = 0;
  std::string chat_template_name;  // "none" when absent
  std::vector<std::string> findings;
};

// Inspects a GGUF package or a llama2.c checkpoint (tokenizer_path needed for the latter).
Result<PackageReport> inspect_package(const std::string& path, const std::string& tokenizer_path,
                                      const ContractDefaults& defaults);

// With `list_tensors`, every tensor's name, type, shape, bytes and offset too.
std::string report_to_text(const PackageReport& report, bool list_tensors = false);
nlohmann::ordered_json report_to_json(const PackageReport& report, bool list_tensors = false);

}  // namespace llmpack
