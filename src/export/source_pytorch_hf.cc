// PyTorch (Meta / llama2.c layout) and Hugging Face folders as export sources.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

#include <nlohmann/json.hpp>

#include "core/file_text.h"
#include "export/model_source.h"
#include "format/hf_model.h"
#include "format/pytorch_checkpoint.h"

namespace llmpack {
namespace {

DType torch_to_dtype(TorchDType t) {
  return t == TorchDType::kF32 ? DType::kF32 : t == TorchDType::kF16 ? DType::kF16 : DType::kBF16;
}
DType st_to_dtype(SafetensorsDType t) {
  return t == SafetensorsDType::kF32 ? DType::kF32 : t == SafetensorsDType::kF16 ? DType::kF16 : DType::kBF16;
}

// Row-major [rows, cols] -> GGUF ne {cols, rows}.
std::vector<int64_t> to_ne(const std::vector<int64_t>& shape) { return {shape.rbegin(), shape.rend()}; }

// "layers.3.attention.wq.weight" -> "blk.3.attn_q.weight" (Meta and llama2.c names).
std::string meta_to_gguf(const std::string& name) {
  static const std::map<std::string, std::string> kTop = {
      {"tok_embeddings.weight", "token_embd.weight"}, {"norm.weight", "output_norm.weight"},
      {"output.weight", "output.weight"}};
  static const std::map<std::string, std::string> kLayer = {
      {"attention.wq.weight", "attn_q.weight"},     {"attention.wk.weight", "attn_k.weight"},
      {"attention.wv.weight", "attn_v.weight"},     {"attention.wo.weight", "attn_output.weight"},
      {"feed_forward.w1.weight", "ffn_gate.weight"}, {"feed_forward.w2.weight", "ffn_down.weight"},
      {"feed_forward.w3.weight", "ffn_up.weight"},   {"attention_norm.weight", "attn_norm.weight"},
      {"ffn_norm.weight", "ffn_norm.weight"}};
  if (auto it = kTop.find(name); it != kTop.end()) return it->second;
  if (name.rfind("layers.", 0) != 0) return "";
  const size_t dot = name.find('.', 7);
  if (dot == std::string::npos) return "";
  auto it = kLayer.find(name.substr(dot + 1));
  return it == kLayer.end() ? "" : "blk." + name.substr(7, dot - 7) + "." + it->second;
}

// "model.layers.3.self_attn.q_proj.weight" -> "blk.3.attn_q.weight".
std::string hf_to_gguf(const std::string& name) {
  static const std::map<std::string, std::string> kTop = {
      {"model.embed_tokens.weight", "token_embd.weight"}, {"model.norm.weight", "output_norm.weight"},
      {"lm_head.weight", "output.weight"}};
  static const std::map<std::string, std::string> kLayer = {
      {"self_attn.q_proj.weight", "attn_q.weight"},     {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.v_proj.weight", "attn_v.weight"},     {"self_attn.o_proj.weight", "attn_output.weight"},
      {"self_attn.q_proj.bias", "attn_q.bias"},         {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.v_proj.bias", "attn_v.bias"},         {"self_attn.q_norm.weight", "attn_q_norm.weight"},
      {"self_attn.k_norm.weight", "attn_k_norm.weight"}, {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},          {"mlp.down_proj.weight", "ffn_down.weight"},
      {"input_layernorm.weight", "attn_norm.weight"},   {"post_attention_layernorm.weight", "ffn_norm.weight"}};
  if (auto it = kTop.find(name); it != kTop.end()) return it->second;
  if (name.rfind("model.layers.", 0) != 0) return "";
  const size_t dot = name.find('.', 13);
  if (dot == std::string::npos) return "";
  auto it = kLayer.find(name.substr(dot + 1));
  return it == kLayer.end() ? "" : "blk." + name.substr(13, dot - 13) + "." + it->second;
}

Status read_params(const std::string& path, const TorchCheckpoint& ckpt, std::map<std::string, double>* out) {
  if (!ckpt.model_args.empty() && path.empty()) {
    *out = ckpt.model_args;
    return ok_status();
  }
  if (path.empty())
    return error_status("this PyTorch checkpoint carries no model_args: pass --params params.json (Meta layout)");
  auto text = read_file_text(path);
  if (!text.ok()) return text.status().with_context("--params");
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return error_status("--params '" + path + "' is not a JSON object");
  // The keys read here must hold what they name (a string "64" is not taken
  // as a width); others (Meta's "multiple_of", "ffn_dim_multiplier": the
  // tensors give the FFN width) are not checked. null: absent.
  const auto bad = [&](const std::string& k, const char* expected) {
    return error_status("--params '" + path + "': '" + k + "' is " + j[k].dump() + ", expected " + expected);
  };
  for (const auto& [k, v] : j.items()) {
    const bool integer_key = k == "dim" || k == "n_layers" || k == "n_heads" || k == "n_kv_heads" || k == "max_seq_len";
    const bool number_key = k == "norm_eps" || k == "rope_theta" || k == "rope_scale_factor" || k == "high_freq_factor";
    if (v.is_null()) continue;
    if (k == "use_scaled_rope" && !v.is_boolean()) return bad(k, "true or false");
    if (integer_key && !(v.is_number_integer() || (v.is_number() && v.get<double>() == std::floor(v.get<double>()))))
      return bad(k, "an integer");
    if (number_key && !v.is_number()) return bad(k, "a number");
    if (v.is_number()) (*out)[k] = v.get<double>();
    if (v.is_boolean()) (*out)[k] = v.get<bool>() ? 1.0 : 0.0;  // use_scaled_rope
  }
  return ok_status();
}

int64_t param_int(const std::map<std::string, double>& p, const char* key, int64_t fallback) {
  auto it = p.find(key);
  return it == p.end() || !(std::isfinite(it->second)) || it->second > 1e12 ? fallback
                                                                            : static_cast<int64_t>(it->second);
}

// Llama 3 RoPE scaling: per rotated pair, the factor that divides its
// frequency (1 for short wavelengths, `factor` for long, smooth between).
std::vector<float> llama3_rope_factors(const HfRopeScaling& r, int64_t head_dim, double theta) {
  const double low_wavelen = r.original_max_position_embeddings / r.low_freq_factor;
  const double high_wavelen = r.original_max_position_embeddings / r.high_freq_factor;
  std::vector<float> f(static_cast<size_t>(head_dim / 2));
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    const double freq = 1.0 / std::pow(theta, 2.0 * i / head_dim);
    const double wavelen = 2 * M_PI / freq;
    double factor = 1.0;
    if (wavelen > low_wavelen) factor = r.factor;
    else if (wavelen >= high_wavelen) {
      const double smooth = (r.original_max_position_embeddings / wavelen - r.low_freq_factor) /
                            (r.high_freq_factor - r.low_freq_factor);
      factor = 1.0 / ((1 - smooth) / r.factor + smooth);
    }
    f[i] = static_cast<float>(factor);
  }
  return f;
}

// The llama3 scaling's numbers: each factor divides a frequency, and the
// smooth band divides by high_freq_factor - low_freq_factor.
// HF's yarn parameters as llama.cpp's keys. The original context defaults to
// max_position_embeddings, as HF's; an explicit attention_factor becomes
// rope.scaling.attn_factor over the 1 + 0.1 ln(factor) the loader applies.
// DeepSeek's mscale pair and truncate false (no floor/ceil of the ramp's
// ends) have no llama.cpp key: refused.
Result<SourceHyperparameters::Yarn> yarn_from_hf(const HfRopeScaling& r, int64_t max_position_embeddings) {
  const std::string what = "config.json rope_scaling (yarn): ";
  const auto positive = [](double v) { return std::isfinite(v) && v > 0; };
  if (!positive(r.factor))
    return error_status(what + "factor " + std::to_string(r.factor) + ", expected a positive number");
  if (!positive(r.beta_fast) || !positive(r.beta_slow))
    return error_status(what + "beta_fast and beta_slow must be positive numbers");
  if (r.mscale || r.mscale_all_dim)
    return error_status(what + "mscale / mscale_all_dim (DeepSeek's YaRN variant) are not supported");
  if (!r.truncate) return error_status(what + "truncate false is not supported");
  SourceHyperparameters::Yarn y;
  y.factor = r.factor;
  y.original_context = r.original_given ? r.original_max_position_embeddings : max_position_embeddings;
  if (y.original_context <= 0)
    return error_status(what + "no original_max_position_embeddings and no max_position_embeddings to take it from");
  y.beta_fast = r.beta_fast;
  y.beta_slow = r.beta_slow;
  if (r.attention_factor) {
    if (!positive(*r.attention_factor)) return error_status(what + "attention_factor must be a positive number");
    y.attn_factor = *r.attention_factor / (r.factor > 1.0 ? 1.0 + 0.1 * std::log(r.factor) : 1.0);
  }
  return y;
}

Status check_llama3_scaling(const HfRopeScaling& r) {
  const bool ok = std::isfinite(r.factor) && r.factor > 0 && std::isfinite(r.high_freq_factor) &&
                  r.low_freq_factor > 0 && r.high_freq_factor > r.low_freq_factor &&
                  r.original_max_position_embeddings > 0;
  if (ok) return ok_status();
  char found[160];
  std::snprintf(found, sizeof found, "factor %g, low_freq_factor %g, high_freq_factor %g, "
                "original_max_position_embeddings %lld", r.factor, r.low_freq_factor, r.high_freq_factor,
                static_cast<long long>(r.original_max_position_embeddings));
  return error_status(std::string("config.json rope_scaling (llama3): expected factor > 0, 0 < low_freq_factor < "
                                  "high_freq_factor and original_max_position_embeddings > 0; found ") + found);
}

// Meta's params.json for Llama 3.1 and later says "use_scaled_rope": true
// and leaves the factor to the code that reads it (ExecuTorch: 8 for Llama 3
// and 3.1, 32 for 3.2 and newer, by the model's name); ExecuTorch's
// "rope_scale_factor" and "high_freq_factor" keys are taken when present.
// Else the factor follows Meta's releases: 32 for the 1B and 3B widths (2048,
// 3072) of Llama 3.2, 8 for the 4096 and wider ones of 3.1 and 3.3.
Status add_meta_scaled_rope(const std::map<std::string, double>& params, ModelSource* s) {
  const auto given = [&](const char* key) { return params.count(key) ? params.at(key) : 0.0; };
  if (given("use_scaled_rope") == 0.0) return ok_status();
  const SourceHyperparameters& h = s->hp;
  HfRopeScaling r;
  r.type = "llama3";
  r.factor = given("rope_scale_factor");
  if (r.factor == 0.0) {
    r.factor = h.dim < 4096 ? 32.0 : 8.0;
    s->notices.push_back("params.json sets use_scaled_rope without a factor: " + std::to_string(int(r.factor)) +
                         ", Llama " + (h.dim < 4096 ? "3.2's (1B, 3B)" : "3.1's and 3.3's") + " for width " +
                         std::to_string(h.dim) + "; add \"rope_scale_factor\" to params.json to choose another");
  }
  if (params.count("high_freq_factor")) r.high_freq_factor = given("high_freq_factor");
  r.low_freq_factor = 1.0;
  r.original_max_position_embeddings = 8192;  // Llama 3's trained context
  LLMPACK_RETURN_IF_ERROR(check_llama3_scaling(r));
  const std::vector<float> f = llama3_rope_factors(r, h.head_dim, h.rope_theta);
  auto& bytes = s->owned.emplace_back(f.size() * 4);
  std::memcpy(bytes.data(), f.data(), bytes.size());
  s->tensors.push_back({"rope_freqs.weight", DType::kF32, {static_cast<int64_t>(f.size())}, bytes, 0});
  return ok_status();
}

void note_skipped(const std::vector<std::string>& skipped, ModelSource* s) {
  if (skipped.empty()) return;
  s->notices.push_back("skipped " + std::to_string(skipped.size()) + " tensors that are not model weights (e.g. '" +
                       skipped[0] + "')");
}

}  // namespace

Result<ModelSource> open_pytorch_source(const std::string& path, const std::string& params_path) {
  auto read = read_torch_checkpoint(path);
  if (!read.ok()) return read.status();
  auto ckpt = std::make_shared<TorchCheckpoint>(std::move(read).value());
  std::map<std::string, double> params;
  LLMPACK_RETURN_IF_ERROR(read_params(params_path, *ckpt, &params));
  ModelSource s;
  s.kind = "PyTorch";
  s.name = "PyTorch checkpoint";
  const TorchTensor* emb = ckpt->find("tok_embeddings.weight");
  const TorchTensor* w1 = ckpt->find("layers.0.feed_forward.w1.weight");
  if (!emb || emb->shape.size() != 2) return error_status("PyTorch checkpoint " + path + ": no 2-D tok_embeddings.weight");
  SourceHyperparameters& h = s.hp;
  h.dim = param_int(params, "dim", emb->shape[1]);
  h.n_layers = param_int(params, "n_layers", 0);
  h.n_heads = param_int(params, "n_heads", 0);
  h.n_kv_heads = param_int(params, "n_kv_heads", h.n_heads);
  if (h.n_kv_heads <= 0) h.n_kv_heads = h.n_heads;  // params.json may say null
  h.vocab_size = emb->shape[0];
  h.hidden_dim = w1 && w1->shape.size() == 2 ? w1->shape[0] : 0;
  h.context_length = param_int(params, "max_seq_len", 0);
  if (auto it = params.find("norm_eps"); it != params.end()) h.norm_eps = it->second;
  if (auto it = params.find("rope_theta"); it != params.end()) h.rope_theta = it->second;
  if (h.dim <= 0 || h.n_layers <= 0 || h.n_heads <= 0 || h.dim % h.n_heads != 0 || h.n_heads % h.n_kv_heads != 0)
    return error_status("params: expected positive dim, n_layers, n_heads (dividing dim) and n_kv_heads (dividing "
                        "n_heads); found dim " + std::to_string(h.dim) + ", n_layers " + std::to_string(h.n_layers) +
                        ", n_heads " + std::to_string(h.n_heads) + ", n_kv_heads " + std::to_string(h.n_kv_heads));
  h.head_dim = h.dim / h.n_heads;
  std::vector<std::string> skipped;
  for (const TorchTensor& t : ckpt->tensors) {
    const std::string name = meta_to_gguf(t.name);
    if (name.empty()) {
      skipped.push_back(t.name);
      continue;
    }
    // llama2.c ties output.weight to the embedding by sharing its storage.
    if (name == "output.weight" && t.storage_key == emb->storage_key && t.storage_offset == emb->storage_offset) continue;
    s.tensors.push_back({name, torch_to_dtype(t.dtype), to_ne(t.shape), t.bytes, 0});
  }
  note_skipped(skipped, &s);
  LLMPACK_RETURN_IF_ERROR(add_meta_scaled_rope(params, &s));
  s.keep_alive.push_back(ckpt);
  return s;
}

Result<ModelSource> open_hf_source(const std::string& dir) {
  auto read = read_hf_model(dir);
  if (!read.ok()) return read.status();
  auto model = std::make_shared<HfModel>(std::move(read).value());
  const HfConfig& c = model->config;
  ModelSource s;
  s.kind = "Hugging Face";
  s.name = dir;
  SourceHyperparameters& h = s.hp;
  const std::string& a = c.architecture;
  if (a == "LlamaForCausalLM" || a == "MistralForCausalLM" || (a.empty() && c.model_type == "llama")) h.arch = "llama";
  else if (a == "Qwen2ForCausalLM" || (a.empty() && c.model_type == "qwen2")) h.arch = "qwen2";
  else if (a == "Qwen3ForCausalLM" || (a.empty() && c.model_type == "qwen3")) h.arch = "qwen3";
  else return error_status("config.json architecture '" + a + "' is not supported (LlamaForCausalLM, "
                           "Qwen2ForCausalLM, Qwen3ForCausalLM)");
  h.dim = c.hidden_size;
  h.hidden_dim = c.intermediate_size;
  h.n_layers = c.num_hidden_layers;
  h.n_heads = c.num_attention_heads;
  h.n_kv_heads = c.num_key_value_heads > 0 ? c.num_key_value_heads : c.num_attention_heads;
  h.head_dim = c.head_dim > 0 ? c.head_dim : c.hidden_size / c.num_attention_heads;
  h.context_length = c.max_position_embeddings;
  h.norm_eps = c.rms_norm_eps;
  h.rope_theta = c.rope_theta;
  if (h.n_heads % h.n_kv_heads != 0 || h.head_dim <= 0 || h.head_dim % 2 != 0)
    return error_status("config.json: num_key_value_heads must divide num_attention_heads and head_dim be even");
  const SafetensorsTensor* emb = model->find("model.embed_tokens.weight");
  if (!emb || emb->shape.size() != 2) return error_status("Hugging Face folder " + dir + ": no 2-D model.embed_tokens.weight");
  h.vocab_size = emb->shape[0];
  std::vector<std::string> skipped;
  for (const auto& shard : model->shards) {
    for (const SafetensorsTensor& t : shard->tensors()) {
      const std::string name = hf_to_gguf(t.name);
      if (name.empty()) {
        skipped.push_back(t.name);
        continue;
      }
      if (name == "output.weight" && c.tie_word_embeddings) continue;
      SourceTensor st{name, st_to_dtype(t.dtype), to_ne(t.shape), t.bytes, 0};
      // HF llama q/k rows are in rotate_half order; GGUF llama wants adjacent pairs.
      if (h.arch == "llama" && (name.find("attn_q.") != std::string::npos)) st.unpermute_heads = h.n_heads;
      if (h.arch == "llama" && (name.find("attn_k.") != std::string::npos)) st.unpermute_heads = h.n_kv_heads;
      s.tensors.push_back(std::move(st));
    }
  }
  note_skipped(skipped, &s);
  if (c.rope_scaling.type == "llama3") {
    LLMPACK_RETURN_IF_ERROR(check_llama3_scaling(c.rope_scaling));
    auto f = llama3_rope_factors(c.rope_scaling, h.head_dim, h.rope_theta);
    auto& bytes = s.owned.emplace_back(f.size() * 4);
    std::memcpy(bytes.data(), f.data(), bytes.size());
    s.tensors.push_back({"rope_freqs.weight", DType::kF32, {static_cast<int64_t>(f.size())}, bytes, 0});
  } else if (c.rope_scaling.type == "linear") {
    if (!std::isfinite(c.rope_scaling.factor) || c.rope_scaling.factor <= 0)
      return error_status("config.json rope_scaling (linear): factor " + std::to_string(c.rope_scaling.factor) +
                          ", expected a positive number");
    h.rope_linear_factor = c.rope_scaling.factor;
  } else if (c.rope_scaling.type == "yarn") {
    LLMPACK_ASSIGN_OR_RETURN(h.yarn, yarn_from_hf(c.rope_scaling, c.max_position_embeddings));
  } else if (!c.rope_scaling.type.empty()) {
    return error_status("config.json rope_scaling type '" + c.rope_scaling.type +
                        "' is not supported (llama3, linear and yarn are)");
  }
  s.chat_template = model->chat_template;
  s.tokenizer_file = model->tokenizer_model_path;
  s.eos_ids = c.eos_token_ids;
  s.tokenizer_json = model->tokenizer_json_path;
  s.keep_alive.push_back(model);
  return s;
}

}  // namespace llmpack
