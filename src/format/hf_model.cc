#include "format/hf_model.h"

#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "core/file_text.h"

namespace llmpack {
namespace {

using nlohmann::json;

Result<json> read_json(const std::string& path) {
  LLMPACK_ASSIGN_OR_RETURN(std::string text, read_file_text(path));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return error_status(path + " is not a JSON object");
  return j;
}

// An integer field: absent keeps `*out`; present must be a non-negative integer.
Status get_int(const json& j, const char* key, int64_t* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return ok_status();
  if (!it->is_number_integer() || it->get<int64_t>() < 0)
    return error_status(std::string("config.json: '") + key + "' must be a non-negative integer");
  *out = it->get<int64_t>();
  return ok_status();
}

Status get_float(const json& j, const char* key, double* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return ok_status();
  if (!it->is_number()) return error_status(std::string("config.json: '") + key + "' must be a number");
  *out = it->get<double>();
  return ok_status();
}

Status read_rope_scaling(const json& j, HfRopeScaling* r) {
  auto it = j.find("rope_scaling");
  if (it == j.end() || it->is_null()) return ok_status();
  if (!it->is_object()) return error_status("config.json: 'rope_scaling' must be an object or null");
  for (const char* k : {"rope_type", "type"}) {
    if (auto t = it->find(k); t != it->end() && t->is_string()) {
      r->type = t->get<std::string>();
      break;
    }
  }
  LLMPACK_RETURN_IF_ERROR(get_float(*it, "factor", &r->factor));
  LLMPACK_RETURN_IF_ERROR(get_float(*it, "low_freq_factor", &r->low_freq_factor));
  LLMPACK_RETURN_IF_ERROR(get_float(*it, "high_freq_factor", &r->high_freq_factor));
  LLMPACK_RETURN_IF_ERROR(get_float(*it, "beta_fast", &r->beta_fast));
  LLMPACK_RETURN_IF_ERROR(get_float(*it, "beta_slow", &r->beta_slow));
  for (auto [key, out] : {std::pair{"attention_factor", &r->attention_factor}, std::pair{"mscale", &r->mscale},
                          std::pair{"mscale_all_dim", &r->mscale_all_dim}}) {
    double v = 0;
    if (auto f = it->find(key); f != it->end() && !f->is_null()) {
      LLMPACK_RETURN_IF_ERROR(get_float(*it, key, &v));
      *out = v;
    }
  }
  if (auto t = it->find("truncate"); t != it->end() && !t->is_null()) {
    if (!t->is_boolean()) return error_status("config.json: 'rope_scaling.truncate' must be true or false");
    r->truncate = t->get<bool>();
  }
  r->original_given = it->contains("original_max_position_embeddings") &&
                      !(*it)["original_max_position_embeddings"].is_null();
  return get_int(*it, "original_max_position_embeddings", &r->original_max_position_embeddings);
}

Status read_shards(HfModel* m) {
  namespace fs = std::filesystem;
  const fs::path dir(m->dir);
  std::vector<std::string> files;
  if (fs::exists(dir / "model.safetensors.index.json")) {
    LLMPACK_ASSIGN_OR_RETURN(json index, read_json((dir / "model.safetensors.index.json").string()));
    auto map = index.find("weight_map");
    if (map == index.end() || !map->is_object())
      return error_status("model.safetensors.index.json has no 'weight_map' object");
    std::set<std::string> unique;
    for (const auto& [name, file] : map->items()) {
      if (!file.is_string()) return error_status("weight_map['" + name + "'] is not a file name");
      const std::string f = file.get<std::string>();
      if (f.find('/') != std::string::npos || f.find("..") != std::string::npos)
        return error_status("weight_map names '" + f + "', expected a file inside the folder");
      if (unique.insert(f).second) files.push_back(f);
    }
  } else if (fs::exists(dir / "model.safetensors")) {
    files.push_back("model.safetensors");
  } else {
    return error_status("no model.safetensors or model.safetensors.index.json in " + m->dir);
  }
  for (const auto& f : files) {
    auto st = SafetensorsFile::open((dir / f).string());
    if (!st.ok()) return st.status();
    m->shards.push_back(std::move(st).value());
  }
  return ok_status();
}

void read_chat_template(HfModel* m) {
  const std::string path = (std::filesystem::path(m->dir) / "tokenizer_config.json").string();
  if (!std::filesystem::exists(path)) return;
  auto j = read_json(path);
  if (!j.ok()) return;
  auto it = j->find("chat_template");
  if (it == j->end()) return;
  if (it->is_string()) {
    m->chat_template = it->get<std::string>();
    return;
  }
  if (!it->is_array()) return;  // newer files: [{name, template}, ...]; take "default"
  for (const auto& e : *it) {
    if (!e.is_object()) continue;
    auto name = e.find("name");
    auto tmpl = e.find("template");
    if (name != e.end() && tmpl != e.end() && name->is_string() && tmpl->is_string() &&
        (name->get<std::string>() == "default" || !m->chat_template))
      m->chat_template = tmpl->get<std::string>();
  }
}

}  // namespace

const SafetensorsTensor* HfModel::find(std::string_view name) const {
  for (const auto& s : shards)
    if (const auto* t = s->find(name)) return t;
  return nullptr;
}

Result<HfConfig> parse_hf_config(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return error_status("config.json is not a JSON object");
  HfConfig c;
  if (auto a = j.find("architectures"); a != j.end() && a->is_array() && !a->empty() && (*a)[0].is_string())
    c.architecture = (*a)[0].get<std::string>();
  if (auto t = j.find("model_type"); t != j.end() && t->is_string()) c.model_type = t->get<std::string>();
  LLMPACK_RETURN_IF_ERROR(get_int(j, "hidden_size", &c.hidden_size));
  LLMPACK_RETURN_IF_ERROR(get_int(j, "intermediate_size", &c.intermediate_size));
  LLMPACK_RETURN_IF_ERROR(get_int(j, "num_hidden_layers", &c.num_hidden_layers));
  LLMPACK_RETURN_IF_ERROR(get_int(j, "num_attention_heads", &c.num_attention_heads));
  c.num_key_value_heads = c.num_attention_heads;
  LLMPACK_RETURN_IF_ERROR(get_int(j, "num_key_value_heads", &c.num_key_value_heads));
  LLMPACK_RETURN_IF_ERROR(get_int(j, "head_dim", &c.head_dim));
  LLMPACK_RETURN_IF_ERROR(get_int(j, "vocab_size", &c.vocab_size));
  LLMPACK_RETURN_IF_ERROR(get_int(j, "max_position_embeddings", &c.max_position_embeddings));
  LLMPACK_RETURN_IF_ERROR(get_float(j, "rms_norm_eps", &c.rms_norm_eps));
  LLMPACK_RETURN_IF_ERROR(get_float(j, "rope_theta", &c.rope_theta));
  LLMPACK_RETURN_IF_ERROR(get_int(j, "bos_token_id", &c.bos_token_id));
  if (auto t = j.find("tie_word_embeddings"); t != j.end() && t->is_boolean()) c.tie_word_embeddings = t->get<bool>();
  if (auto e = j.find("eos_token_id"); e != j.end()) {
    if (e->is_number_integer()) c.eos_token_ids.push_back(e->get<int64_t>());
    else if (e->is_array())
      for (const auto& x : *e)
        if (x.is_number_integer()) c.eos_token_ids.push_back(x.get<int64_t>());
  }
  LLMPACK_RETURN_IF_ERROR(read_rope_scaling(j, &c.rope_scaling));
  if (c.hidden_size <= 0 || c.num_hidden_layers <= 0 || c.num_attention_heads <= 0 || c.intermediate_size <= 0)
    return error_status("config.json: expected positive hidden_size, intermediate_size, num_hidden_layers and "
                        "num_attention_heads");
  return c;
}

Result<HfModel> read_hf_model(const std::string& dir) {
  namespace fs = std::filesystem;
  HfModel m;
  m.dir = dir;
  const std::string context = "Hugging Face folder " + dir;
  auto text = read_file_text((fs::path(dir) / "config.json").string());
  if (!text.ok()) return text.status().with_context(context);
  auto config = parse_hf_config(*text);
  if (!config.ok()) return config.status().with_context(context);
  m.config = std::move(config).value();
  if (auto st = read_shards(&m); !st.ok()) return st.with_context(context);
  read_chat_template(&m);
  if (fs::exists(fs::path(dir) / "tokenizer.model")) m.tokenizer_model_path = (fs::path(dir) / "tokenizer.model").string();
  if (fs::exists(fs::path(dir) / "tokenizer.json")) m.tokenizer_json_path = (fs::path(dir) / "tokenizer.json").string();
  return m;
}

}  // namespace llmpack
