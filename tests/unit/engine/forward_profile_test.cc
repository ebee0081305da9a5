// The forward pass's per-stage timing (`llmpack bench --profile`).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "common/tiny_model.h"

namespace llmpack {
namespace {

LoadedPackage load_profiled_tiny() {
  ProgramOptions options;
  options.cpu_threads = 2;
  auto loaded = testing::load_tiny_package(testing::TinyModelSpec{}, options);
  EXPECT_TRUE(loaded.ok()) << loaded.status().message();
  return std::move(loaded).value();
}

TEST(ForwardProfile, EveryStageOfAPrefillGetsTime) {
  auto pkg = load_profiled_tiny();
  ForwardProfile profile;
  pkg.program->bind_profile(&profile);
  const std::vector<int64_t> tokens = {1, 5, 9, 13, 7, 3};
  ASSERT_TRUE(pkg.program->forward(tokens, 0).ok());
  for (size_t s = 0; s < ForwardProfile::kStages; ++s)
    EXPECT_GT(profile.ns[s], 0) << forward_stage_name(static_cast<ForwardStage>(s));
  EXPECT_EQ(profile.total_ns(), std::accumulate(profile.ns.begin(), profile.ns.end(), int64_t{0}));
}

TEST(ForwardProfile, UnboundProfileStopsCounting) {
  auto pkg = load_profiled_tiny();
  ForwardProfile profile;
  pkg.program->bind_profile(&profile);
  const std::vector<int64_t> tokens = {1, 5, 9};
  ASSERT_TRUE(pkg.program->forward(tokens, 0).ok());
  const auto after_first = profile.ns;
  pkg.program->bind_profile(nullptr);
  ASSERT_TRUE(pkg.program->forward(std::vector<int64_t>{4}, 3).ok());
  EXPECT_EQ(profile.ns, after_first);
  profile.reset();
  EXPECT_EQ(profile.total_ns(), 0);
}

TEST(ForwardProfile, StagesHaveDistinctNames) {
  std::vector<std::string> names;
  for (size_t s = 0; s < ForwardProfile::kStages; ++s) names.emplace_back(forward_stage_name(static_cast<ForwardStage>(s)));
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::unique(names.begin(), names.end()), names.end());
}

}  // namespace
}  // namespace llmpack
