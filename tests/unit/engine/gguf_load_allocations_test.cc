// Reading a GGUF's string arrays (a vocabulary: 100k-400k strings) takes a few
// allocations, not one or more per string: on the VMs we measure on each fresh
// 4 KiB page costs 15-17 us, and one std::string per string plus a
// description string per element made the parse of Llama 3's vocabulary take
// 120-145 ms (docs/PERFORMANCE.md section 20).
#include <gtest/gtest.h>

#include "format/gguf.h"
#include "unit/engine/alloc_counter.h"

namespace llmpack::testing {
namespace {

TEST(GgufLoadAllocations, StringArraysTakeAFewAllocationsNotOnePerString) {
  constexpr int kStrings = 20000;
  std::vector<std::string> tokens;
  for (int i = 0; i < kStrings; ++i) tokens.push_back("a token longer than SSO #" + std::to_string(i));
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_string_array("tokenizer.ggml.tokens", tokens);
  const std::vector<uint8_t> bytes = w.to_bytes();
  ASSERT_FALSE(bytes.empty());

  Result<std::unique_ptr<GgufFile>> f = error_status("not parsed");
  int64_t allocations = 0;
  {
    AllocationCounter counter;
    f = GgufFile::from_bytes(bytes);
    allocations = counter.count();
  }
  ASSERT_TRUE(f.ok()) << f.status().message();
  const StringTable* read = (*f)->get_string_array("tokenizer.ggml.tokens");
  ASSERT_NE(read, nullptr);
  ASSERT_EQ(read->size(), tokens.size());
  EXPECT_EQ(read->to_vector(), tokens);
  EXPECT_LT(allocations, 64) << "parsing " << kStrings << " strings";
}

}  // namespace
}  // namespace llmpack::testing
