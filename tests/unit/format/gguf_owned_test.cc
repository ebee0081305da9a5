// GgufFile::from_owned_bytes: adopts a buffer without copying and lets the
// caller write each tensor's bytes once, in place (synthetic models).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "format/gguf.h"

namespace llmpack {
namespace {

std::vector<uint8_t> two_tensor_file() {
  static const std::vector<uint8_t> zeros(64, 0);
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  EXPECT_TRUE(w.add_tensor("a", DType::kF32, {4}, std::span(zeros).first(16)).ok());
  EXPECT_TRUE(w.add_tensor("b", DType::kF32, {2, 3}, std::span(zeros).first(24)).ok());
  return w.to_bytes();
}

TEST(GgufOwned, AdoptsWithoutCopyAndFillsInPlace) {
  auto bytes = two_tensor_file();
  ASSERT_FALSE(bytes.empty());
  const uint8_t* base = bytes.data();
  std::vector<std::string> order;
  auto f = GgufFile::from_owned_bytes(std::move(bytes), [&](const GgufTensorInfo& t, std::span<uint8_t> out) {
    order.push_back(t.name);
    EXPECT_EQ(out.size(), t.n_bytes);
    for (size_t i = 0; i < out.size() / 4; ++i) {
      const float v = static_cast<float>(i) + (t.name == "b" ? 100.0f : 0.0f);
      std::memcpy(out.data() + 4 * i, &v, 4);
    }
    return ok_status();
  });
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(order, (std::vector<std::string>{"a", "b"}));
  const GgufTensorInfo* b = (*f)->find_tensor("b");
  ASSERT_NE(b, nullptr);
  EXPECT_GE(b->data, base);  // the adopted buffer, not a copy
  float v = 0;
  std::memcpy(&v, b->data + 4 * 5, 4);
  EXPECT_EQ(v, 105.0f);
}

TEST(GgufOwned, FillErrorAndDamagedBytesAreReported) {
  auto f = GgufFile::from_owned_bytes(two_tensor_file(), [](const GgufTensorInfo& t, std::span<uint8_t>) {
    return t.name == "b" ? error_status("cannot fill b") : ok_status();
  });
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("cannot fill b"), std::string::npos);
  auto damaged = GgufFile::from_owned_bytes(std::vector<uint8_t>{'G', 'G', 'U', 'F', 3});
  EXPECT_FALSE(damaged.ok());
}

TEST(GgufOwned, ToBytesEqualsWrittenSizeExactly) {
  auto bytes = two_tensor_file();
  EXPECT_EQ(bytes.size() % 32, 0u);  // data section padded to the alignment
  EXPECT_EQ(bytes.capacity(), bytes.size());  // allocated once, at its exact size
}

}  // namespace
}  // namespace llmpack
