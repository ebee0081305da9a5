// GGUF files (re-packaging) and llama2.c checkpoints as export sources.
#include <cstring>

#include "export/model_source.h"
#include "format/llama2c.h"
#include "model/model_config.h"

namespace llmpack {
namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace

Result<ModelSource> open_gguf_source(const std::string& path) {
  auto opened = GgufFile::open(path);
  if (!opened.ok()) return opened.status();
  std::shared_ptr<GgufFile> gguf = std::move(opened).value();
  auto config = config_from_gguf(*gguf);
  if (!config.ok()) return config.status().with_context("GGUF " + path);
  ModelSource s;
  s.kind = "GGUF";
  s.name = config->name;
  SourceHyperparameters& h = s.hp;
  h.arch = config->arch_name;
  h.dim = config->dim;
  h.hidden_dim = config->hidden_dim;
  h.n_layers = config->n_layers;
  h.n_heads = config->n_heads;
  h.n_kv_heads = config->n_kv_heads;
  h.head_dim = config->head_dim;
  h.vocab_size = config->vocab_size;
  h.context_length = config->context_length;
  h.norm_eps = config->norm_eps;
  h.rope_theta = config->rope_theta;
  TokenizerMetadata tok;
  for (const auto& [key, value] : gguf->metadata()) {
    if (starts_with(key, "llmpack.") || key == "general.alignment") continue;
    if (key == "tokenizer.chat_template") {
      if (const auto* t = std::get_if<std::string>(&value.value)) s.chat_template = *t;
    } else if (starts_with(key, "tokenizer.")) {
      tok.keys.emplace_back(key, value);
    } else {
      s.metadata.emplace_back(key, value);
    }
  }
  if (const auto* tokens = gguf->get_string_array("tokenizer.ggml.tokens")) {
    tok.vocab_size = static_cast<int64_t>(tokens->size());
    tok.bos_id = gguf->get_int("tokenizer.ggml.bos_token_id").value_or(-1);
    tok.eos_id = gguf->get_int("tokenizer.ggml.eos_token_id").value_or(-1);
    tok.description = "the GGUF's own (" + gguf->get_string("tokenizer.ggml.model").value_or("?") + ", " +
                      std::to_string(tok.vocab_size) + " tokens)";
    s.tokenizer = std::move(tok);
  }
  for (const auto& t : gguf->tensors())
    s.tensors.push_back({t.name, t.dtype, t.ne, std::span<const uint8_t>(t.data, t.n_bytes), 0});
  s.keep_alive.push_back(gguf);
  return s;
}

Result<ModelSource> open_llama2c_source(const std::string& path) {
  auto ckpt = read_llama2c_checkpoint(path);
  if (!ckpt.ok()) return ckpt.status().with_context("llama2.c checkpoint " + path);
  auto owned = std::make_shared<Llama2cCheckpoint>(std::move(ckpt).value());
  const Llama2cConfig& c = owned->config;
  const Llama2cWeights& w = owned->weights;
  ModelSource s;
  s.kind = "llama2.c";
  s.name = "llama2.c checkpoint";
  SourceHyperparameters& h = s.hp;
  h.dim = c.dim;
  h.hidden_dim = c.hidden_dim;
  h.n_layers = c.n_layers;
  h.n_heads = c.n_heads;
  h.n_kv_heads = c.n_kv_heads;
  h.head_dim = c.head_dim();
  h.vocab_size = c.vocab_size;
  h.context_length = c.seq_len;
  // llama2.c rotates adjacent pairs, GGUF llama's layout: no permutation.
  auto add = [&](std::string name, const float* data, std::vector<int64_t> ne) {
    int64_t n = 1;
    for (int64_t d : ne) n *= d;
    s.tensors.push_back({std::move(name), DType::kF32, std::move(ne),
                         std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(data), n * 4), 0});
  };
  const int64_t dim = c.dim, kv = c.kv_dim(), hid = c.hidden_dim;
  add("token_embd.weight", w.token_embedding, {dim, c.vocab_size});
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    add(p + "attn_norm.weight", w.rms_att + i * dim, {dim});
    add(p + "attn_q.weight", w.wq + i * dim * dim, {dim, dim});
    add(p + "attn_k.weight", w.wk + i * kv * dim, {dim, kv});
    add(p + "attn_v.weight", w.wv + i * kv * dim, {dim, kv});
    add(p + "attn_output.weight", w.wo + i * dim * dim, {dim, dim});
    add(p + "ffn_norm.weight", w.rms_ffn + i * dim, {dim});
    add(p + "ffn_gate.weight", w.w1 + i * hid * dim, {dim, hid});
    add(p + "ffn_down.weight", w.w2 + i * dim * hid, {hid, dim});
    add(p + "ffn_up.weight", w.w3 + i * hid * dim, {dim, hid});
  }
  add("output_norm.weight", w.rms_final, {dim});
  if (!c.shared_classifier) add("output.weight", w.wcls, {dim, c.vocab_size});
  s.keep_alive.push_back(owned);
  return s;
}

}  // namespace llmpack
