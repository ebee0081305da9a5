// The IQ codebooks (iq_blocks.h), expanded at compile time from the level
// codes of iq_grids_data.inc: entry i's code holds one small level number
// per element, element j at bits [b j, b j + b) (b = 2 for 3 or 4 levels,
// 3 for 8).
#include <cstddef>

#include "kernels/iq_blocks.h"

namespace llmpack::kernels {
namespace {

#include "kernels/iq_grids_data.inc"

template <class Entry, size_t N, size_t L>
constexpr std::array<Entry, N> expand_codes(const uint16_t (&codes)[N], const std::array<int, L>& levels) {
  constexpr int kBits = L <= 4 ? 2 : 3;
  std::array<Entry, N> grid{};
  for (size_t i = 0; i < N; ++i)
    for (size_t j = 0; j < grid[i].size(); ++j) {
      const int code = (codes[i] >> (kBits * j)) & ((1 << kBits) - 1);
      grid[i][j] = static_cast<typename Entry::value_type>(levels[code]);
    }
  return grid;
}

constexpr std::array<int, 3> kIq2Levels = {8, 25, 43};
constexpr std::array<int, 8> kIq3xxsLevels = {4, 12, 20, 28, 36, 44, 52, 62};
constexpr std::array<int, 8> kIq3sLevels = {1, 3, 5, 7, 9, 11, 13, 15};
constexpr std::array<int, 3> kIq1Levels = {-1, 0, 1};
constexpr std::array<int, 3> kIq1LevelsTimes8 = {-8, 0, 8};

}  // namespace

constinit const std::array<IqGrid8, 256> kIq2xxsGrid = expand_codes<IqGrid8>(kIq2xxsCodes, kIq2Levels);
constinit const std::array<IqGrid8, 512> kIq2xsGrid = expand_codes<IqGrid8>(kIq2xsCodes, kIq2Levels);
constinit const std::array<IqGrid8, 1024> kIq2sGrid = expand_codes<IqGrid8>(kIq2sCodes, kIq2Levels);
constinit const std::array<IqGrid4, 256> kIq3xxsGrid = expand_codes<IqGrid4>(kIq3xxsCodes, kIq3xxsLevels);
constinit const std::array<IqGrid4, 512> kIq3sGrid = expand_codes<IqGrid4>(kIq3sCodes, kIq3sLevels);
constinit const std::array<IqSignedGrid8, 2048> kIq1sGrid = expand_codes<IqSignedGrid8>(kIq1sCodes, kIq1Levels);
constinit const std::array<IqSignedGrid8, 2048> kIq1sGridTimes8 =
    expand_codes<IqSignedGrid8>(kIq1sCodes, kIq1LevelsTimes8);

}  // namespace llmpack::kernels
