// Source detection and the tensor-set check shared by every source.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "export/model_source.h"

namespace llmpack {

const SourceTensor* ModelSource::find(std::string_view name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

namespace {

std::string ne_string(const std::vector<int64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

Status expect(const ModelSource& src, const std::string& name, std::vector<int64_t> ne, bool required) {
  const SourceTensor* t = src.find(name);
  if (!t) return required ? error_status("missing tensor '" + name + "'") : ok_status();
  int64_t have = 1, want = 1;
  for (int64_t d : t->ne) have *= d;
  for (int64_t d : ne) want *= d;
  // Vectors may come as [n] or [n, 1]; matrices must match exactly.
  const bool ok = ne.size() == 1 ? have == want : t->ne == ne;
  if (!ok)
    return error_status("tensor '" + name + "' has shape " + ne_string(t->ne) + ", expected " + ne_string(ne));
  return ok_status();
}

}  // namespace

Status check_source_hyperparameters(const SourceHyperparameters& h) {
  // Held as f32 in the package; a negative or NaN RoPE base or RMS epsilon
  // turns every logit into NaN.
  const auto check = [](const char* name, double v, bool positive) {
    if (std::isfinite(static_cast<float>(v)) && v >= 0 && (!positive || v > 0)) return ok_status();
    char shown[32];
    std::snprintf(shown, sizeof shown, "%g", v);
    return error_status(std::string(name) + " is " + shown + ", expected a " +
                        (positive ? "positive" : "non-negative") + " finite number");
  };
  LLMPACK_RETURN_IF_ERROR(check("rope_theta", h.rope_theta, true));
  return check("norm_eps (rms_norm_eps)", h.norm_eps, false);
}

Status check_source_tensors(const ModelSource& s) {
  const SourceHyperparameters& h = s.hp;
  const int64_t q = h.n_heads * h.head_dim, kv = h.n_kv_heads * h.head_dim;
  LLMPACK_RETURN_IF_ERROR(expect(s, "token_embd.weight", {h.dim, h.vocab_size}, true));
  LLMPACK_RETURN_IF_ERROR(expect(s, "output_norm.weight", {h.dim}, true));
  LLMPACK_RETURN_IF_ERROR(expect(s, "output.weight", {h.dim, h.vocab_size}, false));
  for (int64_t i = 0; i < h.n_layers; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    LLMPACK_RETURN_IF_ERROR(expect(s, p + "attn_norm.weight", {h.dim}, true));
    LLMPACK_RETURN_IF_ERROR(expect(s, p + "attn_q.weight", {h.dim, q}, true));
    LLMPACK_RETURN_IF_ERROR(expect(s, p + "attn_k.weight", {h.dim, kv}, true));
    LLMPACK_RETURN_IF_ERROR(expect(s, p + "attn_v.weight", {h.dim, kv}, true));
    LLMPACK_RETURN_IF_ERROR(expect(s, p + "attn_output.weight", {q, h.dim}, true));
    LLMPACK_RETURN_IF_ERROR(expect(s, p + "ffn_norm.weight", {h.dim}, true));
    LLMPACK_RETURN_IF_ERROR(expect(s, p + "ffn_gate.weight", {h.dim, h.hidden_dim}, true));
    LLMPACK_RETURN_IF_ERROR(expect(s, p + "ffn_up.weight", {h.dim, h.hidden_dim}, true));
    LLMPACK_RETURN_IF_ERROR(expect(s, p + "ffn_down.weight", {h.hidden_dim, h.dim}, true));
    const bool bias = h.arch == "qwen2", qk_norm = h.arch == "qwen3";
    LLMPACK_RETURN_IF_ERROR(expect(s, p + "attn_q.bias", {q}, bias));
    LLMPACK_RETURN_IF_ERROR(expect(s, p + "attn_k.bias", {kv}, bias));
    LLMPACK_RETURN_IF_ERROR(expect(s, p + "attn_v.bias", {kv}, bias));
    LLMPACK_RETURN_IF_ERROR(expect(s, p + "attn_q_norm.weight", {h.head_dim}, qk_norm));
    LLMPACK_RETURN_IF_ERROR(expect(s, p + "attn_k_norm.weight", {h.head_dim}, qk_norm));
  }
  return ok_status();
}

Result<ModelSource> open_model_source(const std::string& checkpoint, const std::string& params_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(checkpoint, ec)) return open_hf_source(checkpoint);
  std::ifstream in(checkpoint, std::ios::binary);
  if (!in) return error_status("cannot open --checkpoint '" + checkpoint + "'");
  char magic[4] = {};
  in.read(magic, 4);
  if (in.gcount() == 4 && std::memcmp(magic, "GGUF", 4) == 0) return open_gguf_source(checkpoint);
  if (in.gcount() == 4 && std::memcmp(magic, "PK\x03\x04", 4) == 0) return open_pytorch_source(checkpoint, params_path);
  return open_llama2c_source(checkpoint);
}

}  // namespace llmpack
