// Hyperparameters read from a GGUF's metadata: a key present with the wrong
// type, or a value no model can run with (a negative RoPE base, a NaN RMS
// epsilon, a zero llama3 frequency factor), is refused at load naming the key
// and what it holds; absent keys still take their defaults.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "common/tiny_model.h"
#include "engine/package_inspection.h"

namespace llmpack {
namespace {

GgufValue number(double v, GgufValueType type = GgufValueType::kF32) { return GgufValue{type, GgufValueType::kU32, v}; }
GgufValue count(uint64_t v) { return GgufValue{GgufValueType::kU32, GgufValueType::kU32, v}; }
GgufValue text(const std::string& s) { return GgufValue{GgufValueType::kString, GgufValueType::kU32, s}; }

// The load's error message for a tiny package with `key` set to `value`
// (empty when it loads).
std::string refusal(const std::string& key, const GgufValue& value) {
  testing::TinyModelSpec spec;
  spec.metadata[key] = value;
  auto loaded = testing::load_tiny_package(spec);
  return loaded.ok() ? std::string() : loaded.status().message();
}

void expect_refused(const std::string& key, const GgufValue& value, const std::string& shown,
                    const std::string& expected) {
  const std::string m = refusal(key, value);
  ASSERT_FALSE(m.empty()) << key << " = " << shown << " loaded";
  EXPECT_NE(m.find("'" + key + "'"), std::string::npos) << m;
  EXPECT_NE(m.find("is " + shown), std::string::npos) << m;
  EXPECT_NE(m.find(expected), std::string::npos) << m;
}

TEST(ModelMetadata, RopeBaseMustBePositiveAndFinite) {
  const std::string key = "llama.rope.freq_base";
  expect_refused(key, number(-5), "-5", "expected a positive finite number");
  expect_refused(key, number(0), "0", "expected a positive finite number");
  expect_refused(key, number(std::nan("")), "nan", "expected a positive finite number");
  expect_refused(key, number(std::numeric_limits<double>::infinity()), "inf", "expected a positive finite number");
  expect_refused(key, number(1e39, GgufValueType::kF64), "1e+39", "expected a positive finite number");  // past f32
  expect_refused(key, text("10000"), "string", "expected a number");
  EXPECT_EQ(refusal(key, number(500000)), "");
}

TEST(ModelMetadata, RmsEpsilonMustBeFiniteAndNotNegative) {
  const std::string key = "llama.attention.layer_norm_rms_epsilon";
  expect_refused(key, number(-1e-5), "-1e-05", "expected a non-negative finite number");
  expect_refused(key, number(std::nan("")), "nan", "expected a non-negative finite number");
  expect_refused(key, text("1e-5"), "string", "expected a number");
  EXPECT_EQ(refusal(key, number(0)), "");
}

TEST(ModelMetadata, IntegerKeysOfAnotherTypeAreRefusedNotDefaulted) {
  expect_refused("llama.attention.head_count_kv", text("2"), "string", "expected an integer");
  const GgufValue array{GgufValueType::kArray, GgufValueType::kI32, std::vector<int64_t>{128}};
  expect_refused("llama.context_length", array, "array of i32", "expected an integer");
  expect_refused("llama.rope.dimension_count", number(8), "f32", "expected an integer");
  // a required key present with another type is named as such, not as missing
  expect_refused("llama.embedding_length", text("48"), "string", "expected an integer");
}

TEST(ModelMetadata, Llama3FrequencyFactorsMustBePositiveAndFinite) {
  testing::TinyModelSpec spec;  // head_dim 8: four factors
  spec.rope_freq_factors = true;
  for (float bad : {0.0f, -2.0f, std::nanf(""), std::numeric_limits<float>::infinity()}) {
    spec.rope_freq_values = {1.0f, bad, 2.0f, 8.0f};
    auto loaded = testing::load_tiny_package(spec);
    ASSERT_FALSE(loaded.ok()) << bad;
    const std::string& m = loaded.status().message();
    EXPECT_NE(m.find("'rope_freqs.weight' element 1"), std::string::npos) << m;
    EXPECT_NE(m.find("expected positive finite frequency factors"), std::string::npos) << m;
  }
  spec.rope_freq_values = {1.0f, 1.5f, 2.0f, 8.0f};
  auto loaded = testing::load_tiny_package(spec);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  auto out = loaded->program->forward(std::vector<int64_t>{1, 5, 9}, 0);
  ASSERT_TRUE(out.ok()) << out.status().message();
  for (float v : out->last()) ASSERT_TRUE(std::isfinite(v));
}


// The hyperparameters a tiny package with these extra metadata keys loads
// with (a default config, and a test failure, when it does not load).
ModelConfig config_with(std::map<std::string, GgufValue> keys) {
  testing::TinyModelSpec spec;
  spec.metadata = std::move(keys);
  auto loaded = testing::load_tiny_package(spec);
  EXPECT_TRUE(loaded.ok()) << loaded.status().message();
  return loaded.ok() ? loaded->program->model().config() : ModelConfig{};
}

// RoPE scaling keys: linear (rope.scaling.factor, or the older
// rope.scale_linear) divides the frequencies; "none" ignores the factor;
// schemes this engine does not run (longrope, dynamic NTK) are refused unless
// their factor is 1.
TEST(ModelMetadata, LinearRopeScalingIsReadAndOtherSchemesRefused) {
  const auto scale_of = [](std::map<std::string, GgufValue> keys) {
    return config_with(std::move(keys)).rope_freq_scale;
  };
  EXPECT_EQ(scale_of({}), 1.0f);
  EXPECT_EQ(scale_of({{"llama.rope.scaling.type", text("linear")}, {"llama.rope.scaling.factor", number(4)}}), 0.25f);
  EXPECT_EQ(scale_of({{"llama.rope.scaling.factor", number(4)}}), 0.25f);  // linear when the type is absent
  EXPECT_EQ(scale_of({{"llama.rope.scale_linear", number(2)}}), 0.5f);
  EXPECT_EQ(scale_of({{"llama.rope.scaling.type", text("none")}, {"llama.rope.scaling.factor", number(4)}}), 1.0f);
  EXPECT_EQ(scale_of({{"llama.rope.scaling.type", text("longrope")}, {"llama.rope.scaling.factor", number(1)}}), 1.0f);

  testing::TinyModelSpec spec;
  spec.metadata = {{"llama.rope.scaling.type", text("longrope")}, {"llama.rope.scaling.factor", number(4)}};
  auto loaded = testing::load_tiny_package(spec);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("RoPE scaling 'longrope' (llama.rope.scaling.factor 4)"),
            std::string::npos)
      << loaded.status().message();
  EXPECT_NE(loaded.status().message().find("not supported: linear, yarn and Llama 3's rope_freqs are"),
            std::string::npos);
  expect_refused("llama.rope.scaling.factor", number(-2), "-2", "expected a positive finite number");
  expect_refused("llama.rope.scaling.type", number(1), "f32", "expected a string");
  expect_refused("llama.rope.scaling.attn_factor", number(0), "0", "expected a positive finite number");
}

// YaRN's keys as llama.cpp's converter writes them (type, factor, original
// context) with llama.cpp's defaults for the rest: beta_fast 32, beta_slow 1,
// ext_factor 1, the original context the trained one when absent, and q, k
// scaled by 1 + 0.1 ln(factor) (times rope.scaling.attn_factor).
TEST(ModelMetadata, YarnRopeScalingIsReadWithLlamaCppDefaults) {
  const ModelConfig plain = config_with({});
  EXPECT_EQ(plain.rope_yarn.ext_factor, 0.0f);
  EXPECT_EQ(plain.rope_attn_scale, 1.0f);
  const ModelConfig yarn = config_with({{"llama.rope.scaling.type", text("yarn")},
                                      {"llama.rope.scaling.factor", number(4)},
                                      {"llama.rope.scaling.original_context_length", count(64)}});
  EXPECT_EQ(yarn.rope_freq_scale, 0.25f);
  EXPECT_EQ(yarn.rope_yarn.ext_factor, 1.0f);
  EXPECT_EQ(yarn.rope_yarn.original_context, 64);
  EXPECT_EQ(yarn.rope_yarn.beta_fast, 32.0f);
  EXPECT_EQ(yarn.rope_yarn.beta_slow, 1.0f);
  EXPECT_FLOAT_EQ(yarn.rope_attn_scale, static_cast<float>(1.0 + 0.1 * std::log(4.0)));
  const ModelConfig tuned = config_with({{"llama.rope.scaling.type", text("yarn")},
                                       {"llama.rope.scaling.factor", number(8)},
                                       {"llama.rope.scaling.attn_factor", number(0.5)},
                                       {"llama.rope.scaling.yarn_beta_fast", number(16)},
                                       {"llama.rope.scaling.yarn_beta_slow", number(2)}});
  EXPECT_EQ(tuned.rope_yarn.original_context, tuned.context_length);
  EXPECT_EQ(tuned.rope_yarn.beta_fast, 16.0f);
  EXPECT_EQ(tuned.rope_yarn.beta_slow, 2.0f);
  EXPECT_FLOAT_EQ(tuned.rope_attn_scale, static_cast<float>(0.5 * (1.0 + 0.1 * std::log(8.0))));

  // rope.scaling.attn_factor scales q and k whatever the scaling type, as in llama.cpp.
  const ModelConfig linear = config_with({{"llama.rope.scaling.type", text("linear")},
                                        {"llama.rope.scaling.factor", number(2)},
                                        {"llama.rope.scaling.attn_factor", number(0.5)}});
  EXPECT_EQ(linear.rope_attn_scale, 0.5f);
  EXPECT_EQ(linear.rope_yarn.ext_factor, 0.0f);
  EXPECT_EQ(config_with({{"llama.rope.scaling.type", text("none")}, {"llama.rope.scaling.attn_factor", number(0.5)}})
                .rope_attn_scale,
            0.5f);

  const auto yarn_refusal = [](const std::string& key, const GgufValue& value) {
    testing::TinyModelSpec spec;
    spec.metadata = {{"llama.rope.scaling.type", text("yarn")}, {"llama.rope.scaling.factor", number(4)},
                     {key, value}};
    auto loaded = testing::load_tiny_package(spec);
    return loaded.ok() ? std::string() : loaded.status().message();
  };
  EXPECT_NE(yarn_refusal("llama.rope.scaling.yarn_log_multiplier", number(0.1))
                .find("yarn_log_multiplier 0.1 (DeepSeek's mscale_all_dim) is not supported"),
            std::string::npos);
  EXPECT_NE(yarn_refusal("llama.rope.scaling.yarn_attn_factor", number(2)).find("yarn_attn_factor is not supported"),
            std::string::npos);
  EXPECT_NE(yarn_refusal("llama.rope.scaling.original_context_length", count(0))
                .find("original_context_length is 0, expected a positive number of positions"),
            std::string::npos);
  EXPECT_NE(yarn_refusal("llama.rope.scaling.yarn_beta_fast", number(-1)).find("expected a positive finite number"),
            std::string::npos);
}

// inspect names a linear or YaRN RoPE scaling in its model line and its JSON, and
// says nothing of scaling for an unscaled model.
TEST(ModelMetadata, InspectShowsALinearOrYarnRopeScaling) {
  const auto inspect = [](const testing::TinyModelSpec& spec) {
    const std::string path = ::testing::TempDir() + "/rope_" + std::to_string(getpid()) + ".gguf";
    const std::vector<uint8_t> bytes = testing::make_tiny_gguf(spec);
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    auto report = inspect_package(path, "", ContractDefaults{});
    std::remove(path.c_str());
    return report;
  };
  testing::TinyModelSpec spec;
  spec.metadata = {{"llama.rope.scaling.type", text("linear")}, {"llama.rope.scaling.factor", number(4)}};
  auto scaled = inspect(spec);
  ASSERT_TRUE(scaled.ok()) << scaled.status().message();
  const std::string text_report = report_to_text(*scaled);
  EXPECT_NE(text_report.find("trained context 128, RoPE scaled linearly by 4\n"), std::string::npos) << text_report;
  EXPECT_EQ(report_to_json(*scaled)["model"]["rope_freq_scale"], 0.25);
  spec.metadata = {{"llama.rope.scaling.type", text("yarn")}, {"llama.rope.scaling.factor", number(4)},
                   {"llama.rope.scaling.original_context_length", count(32)}};
  auto yarn = inspect(spec);
  ASSERT_TRUE(yarn.ok()) << yarn.status().message();
  EXPECT_NE(report_to_text(*yarn).find("trained context 128, RoPE scaled by YaRN by 4 from 32 positions\n"),
            std::string::npos)
      << report_to_text(*yarn);
  const auto yarn_json = report_to_json(*yarn)["model"];
  EXPECT_EQ(yarn_json["rope_yarn"]["original_context"], 32);
  EXPECT_FLOAT_EQ(yarn_json["rope_attn_scale"].get<float>(), static_cast<float>(1.0 + 0.1 * std::log(4.0)));
  auto plain = inspect(testing::TinyModelSpec{});
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(report_to_text(*plain).find("RoPE scaled"), std::string::npos);
  EXPECT_FALSE(report_to_json(*plain)["model"].contains("rope_freq_scale"));
  EXPECT_FALSE(report_to_json(*plain)["model"].contains("rope_yarn"));
}

}  // namespace
}  // namespace llmpack
