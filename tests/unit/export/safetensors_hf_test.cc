// safetensors validation, and Hugging Face folders (sharded, qwen2 biases,
// qwen3 q/k norms, llama3 RoPE scaling) exported and checked against the
// same weights loaded straight from GGUF.
#include <gtest/gtest.h>

#include <cmath>

#include "common/tiny_model.h"
#include "export_test_util.h"
#include "format/gguf.h"
#include "format/safetensors_file.h"

namespace llmpack {
namespace {

using nlohmann::json;
using testing::ScratchDir;

// A safetensors file from (name, shape, f32 values) entries.
struct StTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  std::string dtype = "F32";
};

std::vector<uint8_t> safetensors_bytes(const std::vector<StTensor>& tensors, const json& extra = json::object()) {
  json header = extra;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  while (text.size() % 8) text += ' ';
  std::vector<uint8_t> out(8);
  const uint64_t n = text.size();
  std::memcpy(out.data(), &n, 8);
  out.insert(out.end(), text.begin(), text.end());
  for (const auto& t : tensors) out.insert(out.end(), t.bytes.begin(), t.bytes.end());
  return out;
}

Status parse(const std::vector<uint8_t>& bytes) {
  auto st = SafetensorsFile::from_file(MappedFile::from_bytes(bytes));
  return st.ok() ? ok_status() : st.status();
}

std::vector<uint8_t> floats(size_t n) { return std::vector<uint8_t>(n * 4, 0); }

TEST(Safetensors, ReadsTensorsAndMetadata) {
  auto bytes = safetensors_bytes({{"a", {2, 3}, floats(6)}, {"b", {4}, floats(4)}}, {{"__metadata__", {{"format", "pt"}}}});
  auto st = SafetensorsFile::from_file(MappedFile::from_bytes(bytes));
  ASSERT_TRUE(st.ok()) << st.status().message();
  ASSERT_EQ((*st)->tensors().size(), 2u);
  EXPECT_EQ((*st)->find("a")->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ((*st)->find("b")->bytes.size(), 16u);
  EXPECT_EQ((*st)->metadata().at("format"), "pt");
}

TEST(Safetensors, DamagedFilesAreRefusedWithTheReason) {
  struct Case {
    std::vector<uint8_t> bytes;
    const char* mentions;
  };
  auto good = safetensors_bytes({{"a", {2, 3}, floats(6)}});
  std::vector<Case> cases;
  cases.push_back({std::vector<uint8_t>(good.begin(), good.begin() + 5), "no header length"});
  auto huge = good;
  huge[6] = 0x7F;
  cases.push_back({huge, "exceeds the file"});
  auto truncated = good;
  truncated.resize(truncated.size() - 4);
  cases.push_back({truncated, "outside the data section"});
  auto bad_json = good;
  bad_json[8] = '[';
  cases.push_back({bad_json, "not a JSON object"});
  cases.push_back({safetensors_bytes({{"a", {2, 4}, floats(6)}}), "shape and dtype need 32"});
  cases.push_back({safetensors_bytes({{"a", {6}, floats(6), "I64"}}), "dtype 'I64'"});
  cases.push_back({safetensors_bytes({{"a", {-1}, floats(6)}}), "non-negative"});
  json overlap = {{"a", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {0, 8}}}},
                  {"b", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {4, 12}}}}};
  auto ov = safetensors_bytes({}, overlap);
  ov.resize(ov.size() + 12);
  cases.push_back({ov, "overlap"});
  json wrong = {{"a", {{"dtype", 5}, {"shape", {2}}, {"data_offsets", {0, 8}}}}};
  cases.push_back({safetensors_bytes({}, wrong), "expected dtype, shape and data_offsets"});
  for (const auto& c : cases) {
    Status st = parse(c.bytes);
    ASSERT_FALSE(st.ok()) << c.mentions;
    EXPECT_NE(st.message().find(c.mentions), std::string::npos) << st.message();
  }
}

// HF tensors from a tiny random GGUF (qwen2/qwen3 keep HF's row order).
std::vector<StTensor> hf_tensors_from(const GgufFile& gguf, int64_t n_layers) {
  auto copy = [&](const std::string& gguf_name, const std::string& hf_name) {
    const GgufTensorInfo* t = gguf.find_tensor(gguf_name);
    StTensor s{hf_name, {t->ne.rbegin(), t->ne.rend()}, std::vector<uint8_t>(t->data, t->data + t->n_bytes)};
    return s;
  };
  std::vector<StTensor> out = {copy("token_embd.weight", "model.embed_tokens.weight"),
                               copy("output_norm.weight", "model.norm.weight"),
                               copy("output.weight", "lm_head.weight")};
  const std::pair<const char*, const char*> names[] = {
      {"attn_norm.weight", "input_layernorm.weight"}, {"ffn_norm.weight", "post_attention_layernorm.weight"},
      {"attn_q.weight", "self_attn.q_proj.weight"},   {"attn_k.weight", "self_attn.k_proj.weight"},
      {"attn_v.weight", "self_attn.v_proj.weight"},   {"attn_output.weight", "self_attn.o_proj.weight"},
      {"attn_q.bias", "self_attn.q_proj.bias"},       {"attn_k.bias", "self_attn.k_proj.bias"},
      {"attn_v.bias", "self_attn.v_proj.bias"},       {"attn_q_norm.weight", "self_attn.q_norm.weight"},
      {"attn_k_norm.weight", "self_attn.k_norm.weight"}, {"ffn_gate.weight", "mlp.gate_proj.weight"},
      {"ffn_up.weight", "mlp.up_proj.weight"},        {"ffn_down.weight", "mlp.down_proj.weight"}};
  for (int64_t i = 0; i < n_layers; ++i)
    for (const auto& [g, h] : names) {
      const std::string gn = "blk." + std::to_string(i) + "." + g;
      if (gguf.find_tensor(gn)) out.push_back(copy(gn, "model.layers." + std::to_string(i) + "." + h));
    }
  out.push_back({"model.layers.0.self_attn.rotary_emb.inv_freq", {4}, floats(4)});  // not a weight
  return out;
}

class HfFolder : public ::testing::TestWithParam<const char*> {};

TEST_P(HfFolder, E1_ShardedFolderMatchesTheSameWeightsFromGguf) {
  const std::string arch = GetParam();
  testing::TinyModelSpec spec;
  spec.arch = arch;
  spec.dim = 64;
  spec.hidden_dim = 96;
  spec.n_heads = 4;
  spec.n_kv_heads = 2;
  auto gguf_bytes = testing::make_tiny_gguf(spec);
  ScratchDir dir;
  testing::write_file(dir.file("tiny.gguf"), gguf_bytes);
  auto gguf = GgufFile::open(dir.file("tiny.gguf"));
  ASSERT_TRUE(gguf.ok());
  auto tensors = hf_tensors_from(**gguf, spec.n_layers);
  // Two shards and an index, as large models come.
  const size_t half = tensors.size() / 2;
  std::vector<StTensor> a(tensors.begin(), tensors.begin() + half), b(tensors.begin() + half, tensors.end());
  std::filesystem::create_directories(dir.file("hf"));
  testing::write_file(dir.file("hf/model-00001-of-00002.safetensors"), safetensors_bytes(a));
  testing::write_file(dir.file("hf/model-00002-of-00002.safetensors"), safetensors_bytes(b));
  json index = {{"weight_map", json::object()}};
  for (const auto& t : a) index["weight_map"][t.name] = "model-00001-of-00002.safetensors";
  for (const auto& t : b) index["weight_map"][t.name] = "model-00002-of-00002.safetensors";
  testing::write_text(dir.file("hf/model.safetensors.index.json"), index.dump());
  const std::string hf_arch = arch == "qwen2" ? "Qwen2ForCausalLM" : "Qwen3ForCausalLM";
  json config = {{"architectures", {hf_arch}}, {"hidden_size", 64}, {"intermediate_size", 96},
                 {"num_hidden_layers", spec.n_layers}, {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                 {"head_dim", 16}, {"vocab_size", spec.vocab_size}, {"max_position_embeddings", 4096},
                 {"rms_norm_eps", 1e-5}, {"rope_theta", 10000.0}, {"tie_word_embeddings", false},
                 {"eos_token_id", {2, 7}}};
  testing::write_text(dir.file("hf/config.json"), config.dump());
  testing::write_text(dir.file("hf/tokenizer_config.json"), R"({"chat_template": "{{ messages }}"})");

  ExportOptions o;
  o.checkpoint = dir.file("hf");
  o.tokenizer_path = dir.file("tiny.gguf");
  o.output = dir.file("out.gguf");
  o.max_seq_len = 16;
  o.max_context_len = 64;
  auto report = export_package(o);
  ASSERT_TRUE(report.ok()) << report.status().message();
  ASSERT_FALSE(report->notices.empty());
  EXPECT_NE(report->notices[0].find("rotary_emb.inv_freq"), std::string::npos) << report->notices[0];

  auto out = GgufFile::open(o.output);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)->get_string("general.architecture"), arch);
  EXPECT_EQ((*out)->get_string("tokenizer.chat_template"), "{{ messages }}");
  EXPECT_EQ((*out)->get_int_array("llmpack.eos_ids"), (std::vector<int64_t>{2, 7}));
  auto exported = testing::load(o.output);
  auto direct = load_gguf_package(std::move(gguf).value(), "", ProgramOptions{});
  ASSERT_TRUE(exported.ok()) << exported.status().message();
  ASSERT_TRUE(direct.ok()) << direct.status().message();
  std::vector<int64_t> prompt = {1, 40, 41, 42, 43};
  auto x = exported->program->forward(prompt, 0);
  ASSERT_TRUE(x.ok());
  std::vector<float> got(x->last().begin(), x->last().end());
  auto y = direct->program->forward(prompt, 0);
  ASSERT_TRUE(y.ok());
  std::vector<float> want(y->last().begin(), y->last().end());
  EXPECT_EQ(got, want);  // same f32 weights, same order: bit-identical
}

INSTANTIATE_TEST_SUITE_P(Qwen, HfFolder, ::testing::Values("qwen2", "qwen3"));

// stories260K's HF folder copied into dir/hf (its config.json returned, to
// be changed and written back with write_config), and export options that
// write dir/out.gguf with the tok512 tokenizer.
json copy_stories260k_hf(const std::string& hf, const ScratchDir& dir) {
  std::filesystem::create_directories(dir.file("hf"));
  std::filesystem::copy_file(hf + "/model.safetensors", dir.file("hf/model.safetensors"));
  std::ifstream in(hf + "/config.json");
  return json::parse(in);
}
void write_config(const ScratchDir& dir, const json& config) {
  testing::write_text(dir.file("hf/config.json"), config.dump());
}
ExportOptions hf_export_options(const ScratchDir& dir) {
  ExportOptions o;
  o.checkpoint = dir.file("hf");
  o.tokenizer_path = testing::fixture_path("llama2c/tok512.bin");
  o.output = dir.file("out.gguf");
  return o;
}

TEST(HfFolderLlama3, RopeScalingWritesFrequencyFactors) {
  LLMPACK_REQUIRE_FIXTURE(hf, "safetensors/stories260K-hf");
  ScratchDir dir;
  json config = copy_stories260k_hf(hf, dir);
  config["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                            {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 64}};
  write_config(dir, config);
  const ExportOptions o = hf_export_options(dir);
  ASSERT_TRUE(export_package(o).ok());
  auto out = GgufFile::open(o.output);
  ASSERT_TRUE(out.ok());
  const GgufTensorInfo* f = (*out)->find_tensor("rope_freqs.weight");
  ASSERT_TRUE(f);
  ASSERT_EQ(f->ne, std::vector<int64_t>{4});  // head_dim 8 / 2
  const float* v = reinterpret_cast<const float*>(f->data);
  // wavelengths 2*pi*10000^(2i/8): 6.3, 63, 628, 6283 against 64/4 = 16 and 64/1 = 64.
  EXPECT_FLOAT_EQ(v[0], 1.0f);
  EXPECT_FLOAT_EQ(v[2], 8.0f);
  EXPECT_FLOAT_EQ(v[3], 8.0f);
  EXPECT_GT(v[1], 1.0f);
  EXPECT_LT(v[1], 8.0f);
  EXPECT_TRUE(testing::load(o.output).ok());
}

// A RoPE base or RMS epsilon no model runs with (each would make every logit
// NaN) is refused before anything is written, naming the field and its value.
TEST(HfFolderErrors, RopeThetaAndRmsEpsilonOutOfRangeAreRefused) {
  LLMPACK_REQUIRE_FIXTURE(hf, "safetensors/stories260K-hf");
  ScratchDir dir;
  const json good = copy_stories260k_hf(hf, dir);
  const ExportOptions o = hf_export_options(dir);
  const struct {
    const char* field;
    double value;
    const char* said;
  } cases[] = {{"rope_theta", -5.0, "rope_theta is -5, expected a positive finite number"},
               {"rope_theta", 0.0, "rope_theta is 0, expected a positive finite number"},
               {"rope_theta", 1e39, "rope_theta is 1e+39, expected a positive finite number"},
               {"rms_norm_eps", -1e-5, "norm_eps (rms_norm_eps) is -1e-05, expected a non-negative finite number"}};
  for (const auto& c : cases) {
    json config = good;
    config[c.field] = c.value;
    write_config(dir, config);
    auto r = export_package(o);
    ASSERT_FALSE(r.ok()) << c.field << " " << c.value;
    EXPECT_NE(r.status().message().find(c.said), std::string::npos) << r.status().message();
    EXPECT_FALSE(std::filesystem::exists(o.output));
  }
  write_config(dir, good);
  auto r = export_package(o);
  ASSERT_TRUE(r.ok()) << r.status().message();
}

// llama3 scaling numbers that would divide by zero or give non-positive
// factors are refused naming all four.
TEST(HfFolderErrors, Llama3ScalingThatCannotGiveFactorsIsRefused) {
  LLMPACK_REQUIRE_FIXTURE(hf, "safetensors/stories260K-hf");
  ScratchDir dir;
  json config = copy_stories260k_hf(hf, dir);
  const ExportOptions o = hf_export_options(dir);
  const json bad[] = {{{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 4.0}, {"high_freq_factor", 4.0}},
                      {{"rope_type", "llama3"}, {"factor", 0.0}},
                      {{"rope_type", "llama3"}, {"factor", 8.0}, {"original_max_position_embeddings", 0}}};
  for (const json& scaling : bad) {
    config["rope_scaling"] = scaling;
    write_config(dir, config);
    auto r = export_package(o);
    ASSERT_FALSE(r.ok()) << scaling.dump();
    EXPECT_NE(r.status().message().find("rope_scaling (llama3): expected factor > 0, 0 < low_freq_factor < "
                                        "high_freq_factor and original_max_position_embeddings > 0; found factor"),
              std::string::npos)
        << r.status().message();
    EXPECT_FALSE(std::filesystem::exists(o.output));
  }
}

// The stories260K folder copied into `dir` with config.json's rope_scaling
// set, exported to o.output and loaded: the package's hyperparameters, or the
// export's or load's error (a failed export leaves no file).
class RopeScalingExport {
 public:
  explicit RopeScalingExport(const std::string& hf) : config_(copy_stories260k_hf(hf, dir_)) {}
  const ExportOptions& options() const { return options_; }
  const json& config() const { return config_; }
  Result<ModelConfig> export_and_load(const json& rope_scaling) {
    config_["rope_scaling"] = rope_scaling;
    write_config(dir_, config_);
    std::filesystem::remove(options_.output);
    auto r = export_package(options_);
    if (!r.ok()) {
      EXPECT_FALSE(std::filesystem::exists(options_.output));
      return r.status();
    }
    auto loaded = testing::load(options_.output);
    if (!loaded.ok()) return loaded.status();
    return loaded->program->model().config();
  }

 private:
  ScratchDir dir_;
  json config_;
  ExportOptions options_ = hf_export_options(dir_);
};

// rope_scaling of type "linear" travels as llama.cpp's rope.scaling keys and
// loads as frequencies divided by the factor; dynamic NTK (which changes
// with the sequence's length) is refused.
TEST(HfFolderRopeScaling, LinearIsWrittenAndDynamicRefused) {
  LLMPACK_REQUIRE_FIXTURE(hf, "safetensors/stories260K-hf");
  RopeScalingExport e(hf);
  auto linear = e.export_and_load({{"type", "linear"}, {"factor", 2.0}});
  ASSERT_TRUE(linear.ok()) << linear.status().message();
  EXPECT_EQ(linear->rope_freq_scale, 0.5f);
  {
    auto out = GgufFile::open(e.options().output);
    ASSERT_TRUE(out.ok());
    EXPECT_EQ((*out)->get_string("llama.rope.scaling.type"), "linear");
    EXPECT_EQ((*out)->get_float("llama.rope.scaling.factor"), 2.0);
  }
  auto dynamic = e.export_and_load({{"type", "dynamic"}, {"factor", 2.0}});
  ASSERT_FALSE(dynamic.ok());
  EXPECT_NE(dynamic.status().message().find(
                "rope_scaling type 'dynamic' is not supported (llama3, linear and yarn are)"),
            std::string::npos)
      << dynamic.status().message();
}

// rope_scaling yarn (Qwen's long-context configs) exports as llama.cpp's
// keys; the original context is max_position_embeddings when the config
// names none (as HF's), and an explicit attention_factor is what q and k are
// scaled by once loaded. DeepSeek's mscale pair is refused.
TEST(HfFolderRopeScaling, YarnIsWrittenAsLlamaCppKeysAndLoads) {
  LLMPACK_REQUIRE_FIXTURE(hf, "safetensors/stories260K-hf");
  RopeScalingExport e(hf);
  const auto export_and_load = [&e](const json& rope_scaling) { return e.export_and_load(rope_scaling); };
  auto plain = export_and_load({{"rope_type", "yarn"}, {"factor", 4.0}});
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain->rope_freq_scale, 0.25f);
  EXPECT_EQ(plain->rope_yarn.original_context, e.config()["max_position_embeddings"].get<int64_t>());
  EXPECT_FLOAT_EQ(plain->rope_attn_scale, static_cast<float>(1.0 + 0.1 * std::log(4.0)));
  {
    auto out = GgufFile::open(e.options().output);
    ASSERT_TRUE(out.ok());
    EXPECT_EQ((*out)->get_string("llama.rope.scaling.type"), "yarn");
    EXPECT_EQ((*out)->get_float("llama.rope.scaling.factor"), 4.0);
    EXPECT_FALSE((*out)->find("llama.rope.scaling.attn_factor"));
    EXPECT_FALSE((*out)->find("llama.rope.scaling.yarn_beta_fast"));
  }
  auto tuned = export_and_load({{"type", "yarn"}, {"factor", 8.0}, {"original_max_position_embeddings", 64},
                                {"attention_factor", 1.5}, {"beta_fast", 16.0}, {"beta_slow", 2.0}});
  ASSERT_TRUE(tuned.ok()) << tuned.status().message();
  EXPECT_EQ(tuned->rope_yarn.original_context, 64);
  EXPECT_FLOAT_EQ(tuned->rope_attn_scale, 1.5f);
  EXPECT_EQ(tuned->rope_yarn.beta_fast, 16.0f);
  EXPECT_EQ(tuned->rope_yarn.beta_slow, 2.0f);
  auto deepseek = export_and_load({{"type", "yarn"}, {"factor", 40.0}, {"mscale", 1.0}, {"mscale_all_dim", 1.0}});
  ASSERT_FALSE(deepseek.ok());
  EXPECT_NE(deepseek.status().message().find("mscale / mscale_all_dim (DeepSeek's YaRN variant) are not supported"),
            std::string::npos)
      << deepseek.status().message();
  auto untruncated = export_and_load({{"type", "yarn"}, {"factor", 4.0}, {"truncate", false}});
  ASSERT_FALSE(untruncated.ok());
  EXPECT_NE(untruncated.status().message().find("truncate false is not supported"), std::string::npos);
}

TEST(HfFolderErrors, UnsupportedArchitectureAndMissingTensorsAreNamed) {
  ScratchDir dir;
  std::filesystem::create_directories(dir.file("hf"));
  testing::write_file(dir.file("hf/model.safetensors"), safetensors_bytes({{"model.embed_tokens.weight", {8, 4}, floats(32)}}));
  json config = {{"architectures", {"GPT2LMHeadModel"}}, {"hidden_size", 4}, {"intermediate_size", 8},
                 {"num_hidden_layers", 1}, {"num_attention_heads", 2}};
  testing::write_text(dir.file("hf/config.json"), config.dump());
  ExportOptions o;
  o.checkpoint = dir.file("hf");
  o.output = dir.file("out.gguf");
  auto r = export_package(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("GPT2LMHeadModel"), std::string::npos) << r.status().message();
  config["architectures"] = {"LlamaForCausalLM"};
  testing::write_text(dir.file("hf/config.json"), config.dump());
  r = export_package(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("missing tensor 'output_norm.weight'"), std::string::npos) << r.status().message();
  EXPECT_FALSE(std::filesystem::exists(o.output));
}

}  // namespace
}  // namespace llmpack
