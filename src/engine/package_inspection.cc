#include "engine/package_inspection.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "format/gguf.h"
#include "format/gguf_file_type.h"

namespace llmpack {
namespace {

std::string n(int64_t v) { return std::to_string(v); }

void read_raw_contract(const GgufFile& gguf, PackageReport& r) {
  namespace k = contract_keys;
  for (std::string_view key : {k::kVersion, k::kMaxSeqLen, k::kMaxContextLen, k::kTokenBound, k::kDynamicShape,
                               k::kUseKvCache, k::kKvCache, k::kEosIds, k::kPositionInput}) {
    const std::string name(key);
    if (!gguf.find(key)) continue;
    r.has_contract_keys = true;
    if (auto b = gguf.get_bool(key)) r.contract_keys[name] = *b;
    else if (auto i = gguf.get_int(key)) r.contract_keys[name] = *i;
    else if (auto s = gguf.get_string(key)) r.contract_keys[name] = *s;
    else if (auto a = gguf.get_int_array(key)) r.contract_keys[name] = *a;
  }
}

void count_tensors(const GgufFile& gguf, PackageReport& r) {
  for (const auto& t : gguf.tensors()) {
    const std::string type(dtype_name(t.dtype));
    r.dtype_tensor_counts[type] += 1;
    r.dtype_bytes[type] += t.n_bytes;
    r.n_params += t.n_elements();
    ++r.n_tensors;
    r.tensor_list.push_back({t.name, type, t.ne, t.n_bytes, t.offset});
  }
}

std::string chat_template_name(const GgufFile& gguf) {
  auto source = gguf.get_string("tokenizer.chat_template");
  if (!source) return "none";
  if (source->find("<|start_header_id|>") != std::string::npos) return "llama3 (from the package)";
  if (source->find("<|im_start|>") != std::string::npos) return "chatml (from the package)";
  if (source->find("[INST]") != std::string::npos) return "llama2/mistral (from the package)";
  if (source->find("<start_of_turn>") != std::string::npos) return "gemma (from the package)";
  if (source->find("<|user|>") != std::string::npos) return "phi3 (from the package)";
  return "custom (from the package)";
}

// Checks the keys as written, so inconsistencies the loader would refuse are
// reported rather than hidden behind one error.
void raw_findings(PackageReport& r) {
  const auto& k = r.contract_keys;
  auto get = [&](std::string_view key) -> std::optional<int64_t> {
    auto it = k.find(std::string(key));
    if (it == k.end() || !it->is_number_integer()) return std::nullopt;
    return it->get<int64_t>();
  };
  namespace ck = contract_keys;
  auto s = get(ck::kMaxSeqLen), c = get(ck::kMaxContextLen), b = get(ck::kTokenBound);
  if (!r.has_contract_keys)
    r.findings.push_back("no llmpack.* keys: a plain GGUF, served with the defaults of P2 (dynamic shape, "
                         "off-graph KV cache, S = B = min(512, C))");
  if (s && b && *s > *b)
    r.findings.push_back("get_max_seq_len " + n(*s) + " exceeds forward's token bound " + n(*b) +
                         ": prompts are prefilled in chunks of " + n(*b));
  if (s && b && *b > *s)
    r.findings.push_back("forward's token bound " + n(*b) + " exceeds get_max_seq_len " + n(*s) +
                         ": the runner uses chunks of " + n(*s));
  if (s && c && *c < *s)
    r.findings.push_back("get_max_context_len " + n(*c) + " is below get_max_seq_len " + n(*s) +
                         ": the engine refuses this package");
  if (b && *b <= 0) r.findings.push_back("forward's token bound is " + n(*b) + ": the engine refuses this package");
  if (r.has_contract_keys && k.find(std::string(ck::kEosIds)) == k.end())
    r.findings.push_back("llmpack.eos_ids is missing: EOS comes from the tokenizer only");
}

void served_findings(PackageReport& r) {
  if (!r.loads) {
    r.findings.push_back("the engine cannot load this package: " + r.load_error);
    return;
  }
  if (r.contract.eos_ids.empty())
    r.findings.push_back("no EOS id: generation stops only at the token budget");
  if (!r.contract.dynamic_shape && r.contract.token_bound == 1)
    r.findings.push_back("static [1, 1] forward: prompts are prefilled token by token");
  else if (!r.contract.dynamic_shape)
    r.findings.push_back("static [1, " + n(r.contract.token_bound) +
                         "] forward: the last chunk of a prompt is padded");
  if (!r.contract.use_kv_cache)
    r.findings.push_back("no KV cache: every call recomputes the whole sequence; prompts beyond " +
                         n(r.contract.token_bound) + " tokens are refused");
}

int64_t parameter_count(const ModelConfig& c, bool tied) {
  const int64_t per_layer = 2 * c.dim + c.dim * c.q_dim() + 2 * c.dim * c.kv_dim() + c.q_dim() * c.dim +
                            3 * c.dim * c.hidden_dim;
  return c.vocab_size * c.dim * (tied ? 1 : 2) + c.n_layers * per_layer + c.dim;
}

}  // namespace

Result<PackageReport> inspect_package(const std::string& path, const std::string& tokenizer_path,
                                      const ContractDefaults& defaults) {
  PackageReport r;
  r.path = path;
  std::error_code ec;
  r.file_bytes = std::filesystem::file_size(path, ec);
  if (ec) return error_status("cannot read '" + path + "': " + ec.message());
  auto gguf = GgufFile::open(path);
  if (gguf.ok()) {
    r.format = "gguf";
    count_tensors(**gguf, r);
    r.file_type = describe_file_type(**gguf);
    if (auto file = (*gguf)->get_string("quantize.imatrix.file")) {
      r.imatrix.file = *file;
      r.imatrix.dataset = (*gguf)->get_string("quantize.imatrix.dataset").value_or("");
      r.imatrix.entries = (*gguf)->get_int("quantize.imatrix.entries_count").value_or(-1);
      r.imatrix.chunks = (*gguf)->get_int("quantize.imatrix.chunks_count").value_or(-1);
    }
    read_raw_contract(**gguf, r);
    auto config = config_from_gguf(**gguf);
    r.config_ok = config.ok();
    if (config.ok()) r.config = *config;
    else r.config_error = config.status().message();
    r.chat_template_name = chat_template_name(**gguf);
    r.tokenizer_kind = (*gguf)->get_string("tokenizer.ggml.model").value_or("none");
    if (const auto* tokens = (*gguf)->get_string_array("tokenizer.ggml.tokens"))
      r.tokenizer_vocab_size = static_cast<int64_t>(tokens->size());
  } else if (gguf.status().message().find("magic") == std::string::npos) {
    return gguf.status().with_context("inspecting '" + path + "'");  // a damaged GGUF
  } else {
    r.format = "llama2c";
    r.chat_template_name = "none";
  }
  if (r.format == "gguf") raw_findings(r);
  ProgramOptions options;
  options.cpu_threads = 1;
  options.defaults = defaults;
  auto loaded = load_package(path, tokenizer_path, options);
  r.loads = loaded.ok();
  if (!loaded.ok()) {
    r.load_error = loaded.status().message();
  } else {
    r.contract = loaded->program->contract();
    r.config = loaded->program->model().config();
    r.config_ok = true;
    r.forward_meta = loaded->program->method_meta("forward").value();
    r.tokenizer_vocab_size = loaded->tokenizer->vocab_size();
    if (r.format == "llama2c") {
      r.tokenizer_kind = "llama2.c tokenizer.bin";
      r.n_params = parameter_count(r.config, loaded->program->model().weights().tied_output);
      r.dtype_tensor_counts["f32"] = 1;  // one f32 weight blob after the header
      r.dtype_bytes["f32"] = static_cast<uint64_t>(r.n_params) * 4;
      r.findings.push_back("llama2.c checkpoint: served with the defaults of P2; export it for a package");
    }
  }
  served_findings(r);
  return r;
}

nlohmann::ordered_json report_to_json(const PackageReport& r, bool list_tensors) {
  nlohmann::ordered_json j;
  j["path"] = r.path;
  j["format"] = r.format;
  j["file_bytes"] = r.file_bytes;
  if (r.config_ok) {
    const ModelConfig& c = r.config;
    j["model"] = {{"architecture", c.arch_name}, {"name", c.name}, {"dim", c.dim}, {"hidden_dim", c.hidden_dim},
                  {"n_layers", c.n_layers}, {"n_heads", c.n_heads}, {"n_kv_heads", c.n_kv_heads},
                  {"head_dim", c.head_dim}, {"vocab_size", c.vocab_size}, {"context_length", c.context_length},
                  {"rope_theta", c.rope_theta}, {"norm_eps", c.norm_eps}};
    if (c.rope_freq_scale != 1.0f) j["model"]["rope_freq_scale"] = c.rope_freq_scale;
    if (c.rope_attn_scale != 1.0f) j["model"]["rope_attn_scale"] = c.rope_attn_scale;
    if (const ModelConfig::Yarn& y = c.rope_yarn; y.ext_factor != 0.0f)
      j["model"]["rope_yarn"] = {{"original_context", y.original_context}, {"ext_factor", y.ext_factor},
                                 {"beta_fast", y.beta_fast}, {"beta_slow", y.beta_slow}};
  } else {
    j["model"] = {{"error", r.config_error}};
  }
  j["tensors"] = {{"count", r.n_tensors}, {"params", r.n_params}, {"dtype_counts", r.dtype_tensor_counts},
                  {"dtype_bytes", r.dtype_bytes}};
  if (!r.file_type.empty()) j["tensors"]["file_type"] = r.file_type;
  if (!r.imatrix.file.empty())
    j["tensors"]["imatrix"] = {{"file", r.imatrix.file}, {"dataset", r.imatrix.dataset},
                               {"entries", r.imatrix.entries}, {"chunks", r.imatrix.chunks}};
  if (list_tensors) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const TensorEntry& t : r.tensor_list)
      list.push_back({{"name", t.name}, {"type", t.type}, {"shape", t.shape}, {"bytes", t.bytes},
                      {"offset", t.offset}});
    j["tensors"]["list"] = list;
  }
  j["contract_keys"] = r.contract_keys;
  j["loads"] = r.loads;
  if (!r.loads) j["load_error"] = r.load_error;
  const PackageContract& c = r.contract;
  j["max_seq_len"] = r.loads ? nlohmann::ordered_json(c.max_seq_len) : nlohmann::ordered_json();
  j["max_context_len"] = r.loads ? nlohmann::ordered_json(c.max_context_len) : nlohmann::ordered_json();
  j["token_bound"] = r.loads ? nlohmann::ordered_json(c.token_bound) : nlohmann::ordered_json();
  j["enable_dynamic_shape"] = c.dynamic_shape;
  j["use_kv_cache"] = c.use_kv_cache;
  j["kv_cache"] = std::string(kv_cache_kind_name(c.kv_cache));
  j["position_input"] = std::string(position_input_name(c.position_input));
  j["eos_ids"] = c.eos_ids;
  if (r.loads) {
    nlohmann::ordered_json inputs = nlohmann::ordered_json::array();
    for (const auto& in : r.forward_meta.inputs)
      inputs.push_back({{"dtype", std::string(scalar_type_name(in.dtype))}, {"sizes", in.sizes},
                        {"dynamic_dim1", in.dynamic_dim1}});
    j["forward"] = {{"inputs", inputs}};
  }
  j["tokenizer"] = {{"kind", r.tokenizer_kind}, {"vocab_size", r.tokenizer_vocab_size}};
  j["chat_template"] = r.chat_template_name;
  j["findings"] = r.findings;
  return j;
}

// The tensor table of `inspect --tensors`: columns as wide as their longest entry.
std::string tensor_table(const std::vector<TensorEntry>& tensors) {
  auto shape_text = [](const std::vector<int64_t>& shape) {
    std::string s;
    for (int64_t d : shape) s += (s.empty() ? "[" : ", ") + n(d);
    return s + "]";
  };
  size_t name_w = 4, type_w = 4, shape_w = 5;
  for (const TensorEntry& t : tensors) {
    name_w = std::max(name_w, t.name.size());
    type_w = std::max(type_w, t.type.size());
    shape_w = std::max(shape_w, shape_text(t.shape).size());
  }
  std::string out;
  char buf[512];
  auto row = [&](const std::string& name, const std::string& type, const std::string& shape, const std::string& bytes,
                 const std::string& offset) {
    std::snprintf(buf, sizeof buf, "  %-*s  %-*s  %-*s  %12s  %12s\n", static_cast<int>(name_w), name.c_str(),
                  static_cast<int>(type_w), type.c_str(), static_cast<int>(shape_w), shape.c_str(), bytes.c_str(),
                  offset.c_str());
    out += buf;
  };
  row("name", "type", "shape", "bytes", "offset");
  for (const TensorEntry& t : tensors)
    row(t.name, t.type, shape_text(t.shape), n(static_cast<int64_t>(t.bytes)), n(static_cast<int64_t>(t.offset)));
  return out;
}

std::string report_to_text(const PackageReport& r, bool list_tensors) {
  std::string out;
  auto line = [&](const std::string& s) { out += s + "\n"; };
  line(r.path + " (" + r.format + ", " + n(static_cast<int64_t>(r.file_bytes)) + " bytes)");
  if (r.config_ok) {
    const ModelConfig& c = r.config;
    char scaling[96] = "";
    if (c.rope_yarn.ext_factor != 0.0f)
      std::snprintf(scaling, sizeof scaling, ", RoPE scaled by YaRN by %g from %lld positions",
                    1.0 / c.rope_freq_scale, static_cast<long long>(c.rope_yarn.original_context));
    else if (c.rope_freq_scale != 1.0f)
      std::snprintf(scaling, sizeof scaling, ", RoPE scaled linearly by %g", 1.0 / c.rope_freq_scale);
    line("model:     " + c.arch_name + (c.name.empty() ? "" : " '" + c.name + "'") + ", dim " + n(c.dim) +
         ", ffn " + n(c.hidden_dim) + ", " + n(c.n_layers) + " layers, " + n(c.n_heads) + " heads (" +
         n(c.n_kv_heads) + " kv, head_dim " + n(c.head_dim) + "), vocab " + n(c.vocab_size) + ", trained context " +
         n(c.context_length) + scaling);
  } else {
    line("model:     " + r.config_error);
  }
  std::string mix;
  for (const auto& [type, count] : r.dtype_tensor_counts) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "%s%lld %s (%.2f MiB)", mix.empty() ? "" : ", ", static_cast<long long>(count),
                  type.c_str(), r.dtype_bytes.at(type) / 1048576.0);
    mix += buf;
  }
  line("tensors:   " + n(r.n_tensors) + " tensors, " + n(r.n_params) + " parameters: " + mix);
  if (!r.file_type.empty()) line("file type: " + r.file_type);
  if (!r.imatrix.file.empty()) {
    std::string used = "imatrix:   quantized with " + r.imatrix.file;
    if (r.imatrix.entries >= 0) used += ", " + n(r.imatrix.entries) + " entries";
    if (r.imatrix.chunks >= 0) used += ", " + n(r.imatrix.chunks) + " chunks";
    if (!r.imatrix.dataset.empty()) used += " of " + r.imatrix.dataset;
    line(used);
  }
  if (r.loads) {
    const PackageContract& c = r.contract;
    line(std::string("contract:  ") + (c.from_keys ? "llmpack.* keys" : "defaults (plain GGUF)") + ": S " +
         n(c.max_seq_len) + ", C " + n(c.max_context_len) + ", B " + n(c.token_bound) + ", " +
         (c.dynamic_shape ? "dynamic" : "static") + " shape, KV cache " + std::string(kv_cache_kind_name(c.kv_cache)) +
         ", position input " + std::string(position_input_name(c.position_input)));
    std::string eos;
    for (int64_t id : c.eos_ids) eos += (eos.empty() ? "" : ", ") + n(id);
    line("eos ids:   " + (eos.empty() ? std::string("none") : eos));
    const auto& tokens = r.forward_meta.inputs[0];
    line("forward:   tokens " + std::string(scalar_type_name(tokens.dtype)) + " [1, " +
         (tokens.dynamic_dim1 ? "1.." : "") + n(tokens.sizes[1]) + "], position " +
         std::string(scalar_type_name(r.forward_meta.inputs[1].dtype)) + " [" + n(r.forward_meta.inputs[1].sizes[0]) +
         "] -> logits float32 [1, " + n(r.config.vocab_size) + "]");
  } else {
    line("contract:  not served: " + r.load_error);
  }
  if (!r.contract_keys.empty()) line("keys:      " + r.contract_keys.dump());
  line("tokenizer: " + r.tokenizer_kind + ", " + n(r.tokenizer_vocab_size) + " tokens");
  line("template:  " + r.chat_template_name);
  if (r.findings.empty()) line("findings:  none");
  for (const auto& f : r.findings) line("finding:   " + f);
  if (list_tensors && !r.tensor_list.empty()) {
    line("tensors (shape as GGUF writes it, row length first; offset from the data section's start):");
    out += tensor_table(r.tensor_list);
  } else if (list_tensors) {
    line("tensors:   a llama2.c checkpoint holds one f32 blob, not named tensors");
  }
  return out;
}

}  // namespace llmpack
