// Hugging Face model folders: config.json, model.safetensors or shards
// listed in model.safetensors.index.json, tokenizer_config.json (chat
// template), and tokenizer.model / tokenizer.json when present.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "format/safetensors_file.h"

namespace llmpack {

struct HfRopeScaling {
  std::string type;                   // "llama3", ... ("" when absent)
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
  bool original_given = false;        // original_max_position_embeddings present
  // yarn's further keys (HF defaults): attention_factor absent means
  // 1 + 0.1 ln(factor); mscale / mscale_all_dim are DeepSeek's variant.
  std::optional<double> attention_factor, mscale, mscale_all_dim;
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  bool truncate = true;
};

struct HfConfig {
  std::string architecture;           // architectures[0], "LlamaForCausalLM"
  std::string model_type;             // "llama", "qwen2", "qwen3"
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;    // defaults to num_attention_heads
  int64_t head_dim = 0;               // 0: hidden_size / num_attention_heads
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  bool tie_word_embeddings = false;
  std::vector<int64_t> eos_token_ids;
  int64_t bos_token_id = -1;
  HfRopeScaling rope_scaling;
};

struct HfModel {
  std::string dir;
  HfConfig config;
  std::vector<std::unique_ptr<SafetensorsFile>> shards;
  std::optional<std::string> chat_template;      // tokenizer_config.json
  std::string tokenizer_model_path;              // tokenizer.model when present, else ""
  std::string tokenizer_json_path;               // tokenizer.json when present, else ""

  const SafetensorsTensor* find(std::string_view name) const;
};

// Parses config.json text (tests use it directly).
Result<HfConfig> parse_hf_config(const std::string& json_text);
Result<HfModel> read_hf_model(const std::string& dir);

}  // namespace llmpack
