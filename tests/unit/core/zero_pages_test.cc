// ZeroedVector: sized without being written, its elements still read as zero,
// and (on Linux, outside sanitizers, which may fill what they allocate) a
// large one adds nothing to RSS until its pages are used.
#include "core/zero_pages.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <string>

namespace llmpack {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// Resident pages of this process (second field of /proc/self/statm), in bytes.
int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t total = 0, resident = -1;
  statm >> total >> resident;
  return resident < 0 ? -1 : resident * 4096;
}

TEST(ZeroedVector, ElementsReadAsZeroAfterResizeAndKeepWhatIsWritten) {
  for (size_t n : {size_t{1}, size_t{7}, size_t{4096}, size_t{1} << 22}) {
    ZeroedVector<float> f(n);
    ASSERT_EQ(f.size(), n);
    EXPECT_TRUE(std::all_of(f.begin(), f.end(), [](float x) { return x == 0.0f; })) << n;
    ZeroedVector<uint8_t> b;
    b.resize(n);
    EXPECT_TRUE(std::all_of(b.begin(), b.end(), [](uint8_t x) { return x == 0; })) << n;
    f[n - 1] = 2.5f;
    b[0] = 9;
    EXPECT_EQ(f[n - 1], 2.5f);
    EXPECT_EQ(b[0], 9);
  }
  // A value given to construct() is stored, not left unwritten.
  ZeroedVector<float> filled(5, 1.5f);
  EXPECT_TRUE(std::all_of(filled.begin(), filled.end(), [](float x) { return x == 1.5f; }));
  filled.push_back(3.0f);
  EXPECT_EQ(filled.back(), 3.0f);
}

TEST(ZeroedVector, ALargeOneTakesNoResidentMemoryUntilUsed) {
  if (kSanitized) GTEST_SKIP() << "sanitizer allocators may write what they allocate";
  if (resident_bytes() < 0) GTEST_SKIP() << "no /proc/self/statm here";
  constexpr size_t kBytes = size_t{256} << 20;
  const int64_t before = resident_bytes();
  ZeroedVector<float> v(kBytes / sizeof(float));
  const int64_t sized = resident_bytes();
  EXPECT_LT(sized - before, int64_t{16} << 20) << "sizing 256 MiB made " << (sized - before) << " bytes resident";
  // Using a quarter of it makes that quarter resident: the pages were there to take.
  for (size_t i = 0; i < v.size() / 4; i += 1024) v[i] = 1.0f;
  const int64_t used = resident_bytes();
  EXPECT_GT(used - sized, int64_t{48} << 20) << "touching 64 MiB made " << (used - sized) << " bytes resident";
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[v.size() - 1], 0.0f);
}

}  // namespace
}  // namespace llmpack
