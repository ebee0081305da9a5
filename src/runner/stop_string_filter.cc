#include "runner/stop_string_filter.h"

#include <algorithm>

namespace llmpack {

StopStringFilter::Output StopStringFilter::push(std::string_view text) {
  Output out;
  std::string buf = held_;
  buf.append(text);
  held_.clear();
  if (stops_.empty()) {
    out.text = std::move(buf);
    return out;
  }
  // The earliest complete match ends the stream; what precedes it is emitted.
  size_t first_match = std::string::npos;
  for (const auto& stop : stops_) first_match = std::min(first_match, buf.find(stop));
  if (first_match != std::string::npos) {
    out.text = buf.substr(0, first_match);
    out.matched = true;
    return out;
  }
  // Hold the longest suffix that is a proper prefix of some stop string.
  // A stop string starts with a UTF-8 lead byte, so the cut is on a character boundary.
  size_t hold = 0;
  for (const auto& stop : stops_) {
    const size_t max_len = std::min(stop.size() - 1, buf.size());
    for (size_t k = max_len; k > hold; --k) {
      if (std::string_view(buf).substr(buf.size() - k) == std::string_view(stop).substr(0, k)) {
        hold = k;
        break;
      }
    }
  }
  out.text = buf.substr(0, buf.size() - hold);
  held_ = buf.substr(buf.size() - hold);
  return out;
}

std::string StopStringFilter::flush() {
  std::string out = std::move(held_);
  held_.clear();
  return out;
}

}  // namespace llmpack
